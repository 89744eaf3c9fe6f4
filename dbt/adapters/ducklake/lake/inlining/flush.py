"""Flushing inlined data: the catalog side of ``ducklake_flush_inlined_data`` (DuckDB's is
duckdb/ducklake@v1.5-variegata src/functions/ducklake_flush_inlined_data.cpp).

A flush moves every inlined row with ``begin_snapshot <= S`` (live *and* deleted versions) into
Parquet files that carry each row's id and inserting snapshot, so time travel and the change
feed read exactly what they read before: each data file begins at its earliest row's
snapshot with ``partial_max`` at its latest, and rows that had been deleted get a delete file
whose per-row snapshot ids say when. Inlined deletes of Parquet rows become (cumulative)
delete files the same way. Then the flushed rows leave the catalog tables. The commit writes
``inline_flush:<tid>`` (plus ``deleted_from_table:<tid>`` when inlined deletes were converted),
and, as DuckDB, it neither advances ``next_row_id`` nor ``record_count``.

The rows are written by Spark in :mod:`...spark.compaction`; this module commits them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .. import files as lake_files
from ..catalog import Catalog, join_path
from ..commit import CommitContext, Transaction, uuid7
from ..data_files import register_files
from ..delete_files import delete_file_table, read_delete_file, schedule_for_deletion
from ..errors import CommitConflictError
from ..models import DeleteFile, NewDataFile, TableRef
from ..tables import DATA
from . import rows as inlined_data

FLUSH_TOKEN = "inline_flush"


@dataclass(frozen=True)
class FlushedFile:
    """A Parquet file of flushed rows, with the positions of rows that had been deleted
    and the snapshot that deleted each (they become the file's delete file)."""

    data_file: NewDataFile
    absolute_path: str
    deleted: tuple[tuple[int, int], ...]  # (position, end_snapshot), positions ascending


def stage_flush(
    tx: Transaction, table_id: int, flushed_at: int, files: Sequence[FlushedFile],
    inlined_tables: Sequence[str], file_deletes: Mapping[int, Sequence[tuple[int, int]]],
) -> None:
    """Stage a flush of the rows read at snapshot ``flushed_at``.

    ``file_deletes`` are the inlined deletes of Parquet rows read at ``flushed_at``
    (data file id -> ``[(position, snapshot)]``).
    """
    tx.touch_data_files(list(file_deletes))

    def op(ctx: CommitContext) -> None:
        lake = ctx.lake
        table = ctx.resolve_table(TableRef(table_id))
        schema = lake.schema(table.schema_name, ctx.latest.snapshot_id, ctx.conn)
        table_dir = lake.table_dir(schema, table)
        columns = lake.columns(table_id, ctx.snapshot_id, ctx.conn)
        ids = register_files(ctx, table, columns, [f.data_file for f in files])
        for data_file_id, flushed in zip(ids, files):
            if flushed.deleted:
                _write_delete_file(ctx, tx, table_id, table_dir, data_file_id,
                                   flushed.absolute_path, list(flushed.deleted), None,
                                   partial_max=False)
        for name in inlined_tables:
            ctx.exec(f"DELETE FROM {ctx.t(name)} WHERE begin_snapshot <= :s",
                     {"s": flushed_at})
        if file_deletes:
            _flush_file_deletes(ctx, tx, table_id, table_dir, flushed_at, file_deletes)
            ctx.change(8, f"deleted_from_table:{table_id}")
        ctx.change(13, f"{FLUSH_TOKEN}:{table_id}")
        if not any(isinstance(hook, _DropEmptyTables) for hook in ctx.after_commit):
            ctx.after_commit.append(_DropEmptyTables(lake))  # once per commit, as DuckDB

    tx.add(DATA, op, f"{FLUSH_TOKEN}:{table_id}")


class _DropEmptyTables:
    """After a flush commits: drop the inlined-data tables it emptied (DuckDB does the same).
    The flush has landed by then, so a failure here is only logged (by the commit): the
    tables stay, empty, and the next flush tries again."""

    def __init__(self, lake: Catalog) -> None:
        self.lake = lake

    def __call__(self) -> None:
        inlined_data.drop_empty_superseded_tables(self.lake)


def _flush_file_deletes(
    ctx: CommitContext, tx: Transaction, table_id: int, table_dir: str, flushed_at: int,
    file_deletes: Mapping[int, Sequence[tuple[int, int]]],
) -> None:
    lake = ctx.lake
    at = ctx.latest.snapshot_id
    data_files = {f.data_file_id: f for f in lake.data_files(table_id, at, ctx.conn)}
    current = lake.delete_files(table_id, at, ctx.conn)
    for fid, entries in file_deletes.items():
        data_file = data_files.get(fid)
        if data_file is None:
            raise CommitConflictError(
                f"data file {fid} was rewritten while its inlined deletes were being flushed; "
                "nothing was committed, rerun the flush")
        path = lake_files.strip_scheme(
            join_path(table_dir, data_file.path, data_file.path_is_relative))
        _write_delete_file(ctx, tx, table_id, table_dir, fid, path, list(entries),
                           current.get(fid), partial_max=True)
    name = inlined_data.inlined_delete_table(table_id)
    ctx.exec(f"DELETE FROM {ctx.t(name)} WHERE begin_snapshot <= :s", {"s": flushed_at})


def _write_delete_file(
    ctx: CommitContext, tx: Transaction, table_id: int, table_dir: str, data_file_id: int,
    data_path: str, entries: list[tuple[int, int]], old: DeleteFile | None, partial_max: bool,
) -> None:
    """A delete file with per-row snapshot ids: the old delete file's rows (if any) plus
    ``entries``; it replaces the old one, which is scheduled for deletion. DuckDB leaves
    ``partial_max`` NULL on the delete file of freshly flushed rows, and sets it when it
    converts inlined deletes."""
    pairs = list(entries)
    if old is not None:
        pairs += read_delete_file(join_path(table_dir, old.path, old.path_is_relative),
                                  old.begin_snapshot)
    pairs = sorted(set(pairs))
    name = f"ducklake-{uuid7()}-delete.parquet"
    path = table_dir + name
    content = delete_file_table(lake_files.strip_scheme(data_path), [p for p, _ in pairs],
                                [s for _, s in pairs])
    size, footer = lake_files.write_table(path, content)
    ctx.on_failure.append(lambda: lake_files.remove_file(path))
    tx.files_written.append(path)
    snaps = [s for _, s in pairs]
    if old is not None:
        ctx.exec(f"DELETE FROM {ctx.t('ducklake_delete_file')} WHERE delete_file_id = :d",
                 {"d": old.delete_file_id})
        schedule_for_deletion(ctx, old.delete_file_id, table_dir, old.path, old.path_is_relative)
    ctx.exec(
        f"INSERT INTO {ctx.t('ducklake_delete_file')} VALUES (:id, :t, :b, NULL, :d, :p, :rel, "
        "'parquet', :n, :size, :footer, NULL, :pm)",
        {"id": ctx.file_id(), "t": table_id, "b": min(snaps), "d": data_file_id, "p": name,
         "rel": True, "n": content.num_rows, "size": size, "footer": footer,
         "pm": max(snaps) if partial_max else None},
    )


__all__ = ["FlushedFile", "stage_flush"]
