"""Deleting rows: positional delete files, inlined deletes and ended data files (the
specification's https://ducklake.select/docs/stable/specification/tables/ducklake_delete_file).

The caller finds which rows to delete (with Spark) and hands over, per data file, the 0-based
positions of those rows, plus the row ids of inlined rows. The delete files themselves are
written here, inside the commit, because a cumulative delete file embeds the snapshot id that
deleted each row, and that id is only known once the commit has claimed it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from . import files as lake_files
from .catalog import join_path
from .commit import CommitContext, Transaction, uuid7
from .errors import NotFoundError
from .inlining import rows as inlined_data
from .models import DeleteFile, TableRef
from .options import inlining_row_limit
from .paths import scheduled_form
from .tables import DELETES

FILE_PATH_FIELD_ID = 2147483646
POS_FIELD_ID = 2147483645
SNAPSHOT_ID_FIELD_ID = 2147483539
SNAPSHOT_ID_COLUMN = "_ducklake_internal_snapshot_id"
ROW_ID_FIELD_ID = 2147483540
ROW_ID_COLUMN = "_ducklake_internal_row_id"

Positions = Sequence[int] | npt.NDArray[np.int64]
"""Row positions in one data file: a list, or the array a vectorised planner makes."""


def _field(name: str, kind: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, kind, metadata={b"PARQUET:field_id": str(field_id).encode()})


def delete_file_table(data_path: str, positions: Positions,
                      snapshots: Sequence[int] | None) -> pa.Table:
    fields = [_field("file_path", pa.string(), FILE_PATH_FIELD_ID),
              _field("pos", pa.int64(), POS_FIELD_ID)]
    arrays = [pa.repeat(pa.scalar(data_path, pa.string()), len(positions)),
              pa.array(positions, pa.int64())]
    if snapshots is not None:
        fields.append(_field(SNAPSHOT_ID_COLUMN, pa.int64(), SNAPSHOT_ID_FIELD_ID))
        arrays.append(pa.array(snapshots, pa.int64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def read_delete_file(path: str, begin_snapshot: int) -> list[tuple[int, int]]:
    """(position, deleting snapshot) pairs of a delete file."""
    table = lake_files.read_table(path)
    positions = table.column("pos").to_pylist()
    if SNAPSHOT_ID_COLUMN in table.column_names:
        snaps = table.column(SNAPSHOT_ID_COLUMN).to_pylist()
    else:
        snaps = [begin_snapshot] * len(positions)
    return list(zip(positions, snaps))


def delete(
    tx: Transaction,
    ref: TableRef,
    positions: Mapping[int, Positions],
    inlined_row_ids: Sequence[int] = (),
) -> None:
    """Stage a DELETE: ``positions`` maps data file id -> row positions in that file."""
    distinct = {fid: _distinct_ascending(pos) for fid, pos in positions.items() if len(pos)}
    if not distinct and not inlined_row_ids:
        return
    tx.touch_data_files(list(distinct))

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        lake = ctx.lake
        if inlined_row_ids:
            if inlined_data.end_rows(ctx, table.table_id, inlined_row_ids):
                ctx.change(12, f"inlined_delete:{table.table_id}")
        if not distinct:
            return
        schema = lake.schema(table.schema_name, ctx.latest.snapshot_id, ctx.conn)
        table_dir = lake.table_dir(schema, table)
        at = ctx.latest.snapshot_id
        data_files = {f.data_file_id: f for f in lake.data_files(table.table_id, at, ctx.conn)}
        current = lake.delete_files(table.table_id, at, ctx.conn)
        inlined_deletes = inlined_data.read_file_deletes(lake, ctx.conn, table.table_id, at)
        total = sum(len(p) for p in distinct.values())
        limit = inlining_row_limit(lake, ctx.conn, schema.schema_id, table.table_id)
        for fid in distinct:
            if fid not in data_files:
                raise NotFoundError(
                    f"data file {fid} of {table.schema_name}.{table.table_name} is no longer "
                    "live; another transaction rewrote it. Nothing was committed; rerun.")
        if 0 < total <= limit:
            inlined_data.add_file_deletes(ctx, table.table_id, distinct)
            ctx.change(12, f"inlined_delete:{table.table_id}")
            return
        for fid, new_positions in distinct.items():
            data_file = data_files[fid]
            old = current.get(fid)
            old_count = (old.delete_count if old else 0) + len(inlined_deletes.get(fid, []))
            data_path = lake_files.strip_scheme(
                join_path(table_dir, data_file.path, data_file.path_is_relative))
            if old_count + len(new_positions) >= data_file.record_count:
                ctx.exec(f"UPDATE {ctx.t('ducklake_data_file')} SET end_snapshot = :s "
                         "WHERE data_file_id = :d", {"s": ctx.snapshot_id, "d": fid})
                ctx.exec(f"UPDATE {ctx.t('ducklake_delete_file')} SET end_snapshot = :s "
                         "WHERE data_file_id = :d AND end_snapshot IS NULL",
                         {"s": ctx.snapshot_id, "d": fid})
                continue
            _write_delete_file(ctx, tx, table.table_id, table_dir, fid, data_path,
                               new_positions, old)
        ctx.change(8, f"deleted_from_table:{table.table_id}")

    tokens = []
    if ref.table_id is not None:
        tokens.append(f"deleted_from_table:{ref.table_id}")
        if inlined_row_ids:
            tokens.append(f"inlined_delete:{ref.table_id}")
    tx.add(DELETES, op, *tokens)


def _distinct_ascending(positions: Positions) -> npt.NDArray[np.int64]:
    """``positions`` sorted, each once, as an array: the form a delete file stores, made
    without a pass over Python ints (a MERGE or UPDATE hands over 100,000s of positions,
    already sorted and distinct from :func:`.spark.dml.arrow_locations`; ``np.unique`` took
    25 ms for 100,000 of them)."""
    array = np.asarray(positions, dtype=np.int64)
    if len(array) > 1 and not (array[1:] > array[:-1]).all():
        array = np.sort(array)
        array = array[np.concatenate(([True], array[1:] != array[:-1]))]
    return array


def _write_delete_file(
    ctx: CommitContext, tx: Transaction, table_id: int, table_dir: str, data_file_id: int,
    data_path: str, new_positions: npt.NDArray[np.int64], old: DeleteFile | None,
) -> None:
    name = f"ducklake-{uuid7()}-delete.parquet"
    path = table_dir + name
    if old is None:
        content = delete_file_table(data_path, new_positions, None)
        begin, partial_max = ctx.snapshot_id, None
    else:
        old_path = join_path(table_dir, old.path, old.path_is_relative)
        pairs = read_delete_file(old_path, old.begin_snapshot)
        pairs += [(p, ctx.snapshot_id) for p in new_positions.tolist()]
        pairs.sort()
        content = delete_file_table(data_path, [p for p, _ in pairs], [s for _, s in pairs])
        snaps = [s for _, s in pairs]
        begin, partial_max = min(snaps), max(snaps)
    size, footer = lake_files.write_table(path, content)
    ctx.on_failure.append(lambda: lake_files.remove_file(path))
    tx.files_written.append(path)
    if old is not None:
        ctx.exec(f"DELETE FROM {ctx.t('ducklake_delete_file')} WHERE delete_file_id = :d",
                 {"d": old.delete_file_id})
        schedule_for_deletion(ctx, old.delete_file_id, table_dir, old.path,
                              old.path_is_relative)
    ctx.exec(
        f"INSERT INTO {ctx.t('ducklake_delete_file')} VALUES (:id, :t, :b, NULL, :d, :p, :rel, "
        "'parquet', :n, :size, :footer, NULL, :pm)",
        {"id": ctx.file_id(), "t": table_id, "b": begin, "d": data_file_id, "p": name,
         "rel": True, "n": content.num_rows, "size": size, "footer": footer, "pm": partial_max},
    )


def schedule_for_deletion(ctx: CommitContext, file_id: int, table_dir: str, path: str,
                          path_is_relative: bool) -> None:
    """Queue a file for ``cleanup_old_files``; paths are stored relative to the data path."""
    stored, relative = scheduled_form(ctx.lake.data_path,
                                      join_path(table_dir, path, path_is_relative))
    ctx.exec(f"INSERT INTO {ctx.t('ducklake_files_scheduled_for_deletion')} VALUES "
             "(:id, :p, :rel, :t)",
             {"id": file_id, "p": stored, "rel": relative, "t": ctx.lake.encode_time(ctx.now)})
