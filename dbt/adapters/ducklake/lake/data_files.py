"""Registering data files and inlined rows: inserts, appends and whole-table replacement.

Row ids follow https://ducklake.select/docs/stable/specification/tables/ducklake_data_file
(``row_id_start``) and tables/ducklake_table_stats (``next_row_id``): each new file takes
``row_id_start = next_row_id`` and advances it by its record count (also when it carries preserved
ids); inlined rows take consecutive ids unless they keep old ones (updates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .commit import CommitContext, Transaction, insert_rows, update_table_stats
from .errors import CommitConflictError
from .inlining import rows as inlined_data
from .models import ColumnInfo, NameMappingSpec, NewDataFile, TableInfo, TableRef
from .tables import DATA, DELETES


def _mapping_rows(specs: Sequence[NameMappingSpec]) -> list[tuple[int, str, int, int | None]]:
    """Flatten a name mapping, pre-order: (index, source_name, target_field_id, parent index)."""
    out: list[tuple[int, str, int, int | None]] = []

    def visit(node: NameMappingSpec, parent: int | None) -> None:
        index = len(out)
        out.append((index, node.source_name, node.column_id, parent))
        for child in node.children:
            visit(child, index)

    for spec in specs:
        visit(spec, None)
    return out


def _mapping_id(ctx: CommitContext, table_id: int, specs: Sequence[NameMappingSpec],
                cache: dict[tuple[Any, ...], int]) -> int:
    """Reuse an identical ``map_by_name`` mapping of the table, or create one."""
    rows = tuple(_mapping_rows(specs))
    if rows in cache:
        return cache[rows]
    existing = ctx.exec(
        f"SELECT m.mapping_id, n.column_id, n.source_name, n.target_field_id, n.parent_column "
        f"FROM {ctx.t('ducklake_column_mapping')} m JOIN {ctx.t('ducklake_name_mapping')} n "
        "ON n.mapping_id = m.mapping_id WHERE m.table_id = :t AND m.type = 'map_by_name' "
        "AND NOT n.is_partition ORDER BY m.mapping_id, n.column_id", {"t": table_id}).all()
    found: dict[int, list[tuple[int, str, int, int | None]]] = {}
    for mid, cid, name, target, parent in existing:
        found.setdefault(int(mid), []).append(
            (int(cid), name, int(target), None if parent is None else int(parent)))
    for mid, mrows in found.items():
        if tuple(mrows) == rows:
            cache[rows] = mid
            return mid
    mapping_id = ctx.file_id()
    insert_rows(ctx, "ducklake_column_mapping",
                [{"mapping_id": mapping_id, "table_id": table_id, "type": "map_by_name"}])
    insert_rows(ctx, "ducklake_name_mapping", [
        {"mapping_id": mapping_id, "column_id": index, "source_name": name,
         "target_field_id": target, "parent_column": parent, "is_partition": False}
        for index, name, target, parent in rows
    ])
    cache[rows] = mapping_id
    return mapping_id


def register_files(
    ctx: CommitContext,
    table: TableInfo,
    columns: Sequence[ColumnInfo],
    files: Sequence[NewDataFile],
    inlined_rows: Sequence[dict[str, Any]] = (),
    inlined_row_ids: Sequence[int] | None = None,
) -> list[int]:
    """Write data-file rows, stats and inlined rows for one table; returns new file ids."""
    counted = [f for f in files if f.counts_as_insert]
    new_inlined = len(inlined_rows) if inlined_row_ids is None else 0
    file_stats = [s for f in counted for s in f.column_stats]
    inlined_stats = inlined_data.row_stats(columns, inlined_rows) if inlined_rows else []
    first_row_id = update_table_stats(
        ctx, table, columns,
        added_rows=sum(f.record_count for f in counted) + len(inlined_rows),
        added_bytes=sum(f.file_size_bytes for f in counted),
        row_id_advance=sum(f.record_count for f in counted) + new_inlined,
        file_stats=file_stats, inlined_stats=inlined_stats,
    )
    next_row_id = first_row_id
    cache: dict[tuple[Any, ...], int] = {}
    ids = []
    live_partition: list[tuple[int | None, tuple[tuple[int, str], ...]]] = []
    for f in files:
        if f.partition_layout is not None:
            if not live_partition:
                live_partition.append(_live_partition(ctx, table.table_id))
            partition_id, layout = live_partition[0]
            if layout != f.partition_layout:
                raise CommitConflictError(
                    f"the partitioning of {table.schema_name}.{table.table_name} changed while "
                    "data was being written for it; nothing was committed, rerun the write")
            f.partition_id = partition_id
        data_file_id = ctx.file_id()
        ids.append(data_file_id)
        mapping_id = _mapping_id(ctx, table.table_id, f.mapping, cache) if f.mapping else None
        if f.row_id_start is not None:
            row_id_start: int | None = f.row_id_start
        elif f.counts_as_insert:
            row_id_start = next_row_id
            next_row_id += f.record_count
        else:
            row_id_start = None
        insert_rows(ctx, "ducklake_data_file", [{
            "data_file_id": data_file_id, "table_id": table.table_id,
            "begin_snapshot": f.begin_snapshot if f.begin_snapshot is not None
            else ctx.snapshot_id,
            "end_snapshot": None, "file_order": None, "path": f.path,
            "path_is_relative": f.path_is_relative, "file_format": "parquet",
            "record_count": f.record_count, "file_size_bytes": f.file_size_bytes,
            "footer_size": f.footer_size, "row_id_start": row_id_start,
            "partition_id": f.partition_id, "encryption_key": None, "mapping_id": mapping_id,
            "partial_max": f.partial_max,
        }])
        insert_rows(ctx, "ducklake_file_column_stats", [
            {"data_file_id": data_file_id, "table_id": table.table_id,
             "column_id": s.column_id, "column_size_bytes": s.column_size_bytes,
             "value_count": s.value_count, "null_count": s.null_count,
             "min_value": s.min_value, "max_value": s.max_value,
             "contains_nan": s.contains_nan, "extra_stats": None}
            for s in f.column_stats
        ])
        insert_rows(ctx, "ducklake_file_partition_value", [
            {"data_file_id": data_file_id, "table_id": table.table_id,
             "partition_key_index": index, "partition_value": value}
            for index, value in f.partition_values
        ])
    if counted:
        ctx.change(7, f"inserted_into_table:{table.table_id}")
    if inlined_rows:
        if inlined_row_ids is None:
            inlined_row_ids = list(range(next_row_id, next_row_id + len(inlined_rows)))
        inlined_data.insert_rows(ctx, table.table_id, columns, inlined_rows, inlined_row_ids)
        if not files:
            ctx.next_file_id += 1  # invalidates readers' stats caches, as DuckDB does
        ctx.change(11, f"inlined_insert:{table.table_id}")
    return ids


def _live_partition(ctx: CommitContext, table_id: int
                    ) -> tuple[int | None, tuple[tuple[int, str], ...]]:
    """The table's partition id and layout as of this commit (including its own changes)."""
    spec = ctx.lake.partition_spec(table_id, ctx.snapshot_id, ctx.conn)
    if spec is None:
        return None, ()
    return spec.partition_id, tuple((c.column_id, c.transform) for c in spec.columns)


def insert(
    tx: Transaction,
    ref: TableRef,
    files: Sequence[NewDataFile] = (),
    inlined_rows: Sequence[dict[str, Any]] = (),
    inlined_row_ids: Sequence[int] | None = None,
) -> None:
    """Stage an INSERT of Parquet files and/or inlined rows into one table."""
    if not files and not inlined_rows:
        return

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        columns = ctx.lake.columns(table.table_id, ctx.snapshot_id, ctx.conn)
        register_files(ctx, table, columns, files, inlined_rows, inlined_row_ids)

    tokens = []
    if ref.table_id is not None:
        if files:
            tokens.append(f"inserted_into_table:{ref.table_id}")
        if inlined_rows:
            tokens.append(f"inlined_insert:{ref.table_id}")
    tx.add(DATA, op, *tokens)


def end_all(ctx: CommitContext, table: TableInfo) -> tuple[bool, bool]:
    """End every live data file, delete file and inlined row of a table (replace contents)."""
    ended_files = ctx.exec(
        f"UPDATE {ctx.t('ducklake_data_file')} SET end_snapshot = :s WHERE table_id = :t AND "
        "end_snapshot IS NULL", {"s": ctx.snapshot_id, "t": table.table_id}).rowcount
    ctx.exec(
        f"UPDATE {ctx.t('ducklake_delete_file')} SET end_snapshot = :s WHERE table_id = :t AND "
        "end_snapshot IS NULL", {"s": ctx.snapshot_id, "t": table.table_id})
    ended_rows = inlined_data.end_all_rows(ctx, table.table_id)
    if ended_files:
        ctx.change(8, f"deleted_from_table:{table.table_id}")
    if ended_rows:
        ctx.change(12, f"inlined_delete:{table.table_id}")
    return bool(ended_files), bool(ended_rows)


def replace(
    tx: Transaction,
    ref: TableRef,
    files: Sequence[NewDataFile] = (),
    inlined_rows: Sequence[dict[str, Any]] = (),
) -> None:
    """Stage replacing a table's contents in one snapshot, keeping its id and history."""

    def delete_op(ctx: CommitContext) -> None:
        end_all(ctx, ctx.resolve_table(ref))

    def insert_op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        columns = ctx.lake.columns(table.table_id, ctx.snapshot_id, ctx.conn)
        if files or inlined_rows:
            register_files(ctx, table, columns, files, inlined_rows)

    tokens = []
    if ref.table_id is not None:
        tokens = [f"deleted_from_table:{ref.table_id}", f"inserted_into_table:{ref.table_id}"]
    tx.add(DELETES - 15, delete_op, *tokens)
    tx.add(DATA + 1, insert_op)
