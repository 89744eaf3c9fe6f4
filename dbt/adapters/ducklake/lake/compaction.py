"""Compaction's catalog side: which files to merge or rewrite, and the commits that swap them.

DuckDB's rules (``ducklake_merge_adjacent_files`` / ``ducklake_rewrite_data_files``, in
duckdb/ducklake@v1.5-variegata src/functions/ducklake_compaction_functions.cpp):

* Candidates are live data files of a table, ordered by ``begin_snapshot, row_id_start,
  data_file_id``, grouped by schema version (from ``ducklake_schema_versions``) and by
  partition (id and values): files of different partitions or schema versions never meet.
* Merge takes files without any delete file or inlined delete, smaller than the target size
  (``max_file_size`` or the ``target_file_size`` option; at least ``min_file_size``), and
  packs neighbours until the target is reached; a group needs two files. The merged file keeps
  history: ``begin_snapshot`` of the first source, ``partial_max`` the latest source snapshot,
  a per-row ``_ducklake_internal_snapshot_id``, and row ids kept (``row_id_start`` when the
  sources are contiguous, else embedded). Sources are removed from the catalog and scheduled
  for deletion: nothing that any snapshot reads is lost, because the merged file replays it.
* Rewrite takes files whose deleted fraction reaches the threshold and writes their live rows
  to a new file that begins at the rewriting snapshot; the old file and its delete file are
  ended (not removed), so time travel before the rewrite still reads them.

The data work (reading sources and writing the new file) is done by Spark in
:mod:`..spark.compaction`; this module only plans and commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from sqlalchemy import Connection, text

from .catalog import Catalog, join_path
from .commit import CommitContext, Transaction
from .data_files import register_files
from .delete_files import schedule_for_deletion
from .errors import CommitConflictError
from .inlining import rows as inlined_data
from .models import DataFile, DeleteFile, NewDataFile, SchemaInfo, TableInfo, TableRef
from .tables import DATA, DELETES

MERGE_TOKEN = "merge_adjacent"
REWRITE_TOKEN = "rewrite_delete"


@dataclass(frozen=True)
class SourceFile:
    """A live data file considered for compaction, with what the grouping needs."""

    data_file: DataFile
    schema_version: int
    partition_values: tuple[str | None, ...]
    delete_file: DeleteFile | None
    inlined_deletes: int

    @property
    def deleted(self) -> int:
        return (self.delete_file.delete_count if self.delete_file else 0) + self.inlined_deletes

    @property
    def group_key(self) -> tuple[object, ...]:
        return (self.schema_version, self.data_file.partition_id, self.partition_values)


@dataclass(frozen=True)
class SortKey:
    """One ``ducklake_sort_expression`` of a table's live sort order."""

    expression: str
    dialect: str
    descending: bool
    nulls_first: bool


def schema_version_of(ranges: Sequence[tuple[int, int]], begin_snapshot: int) -> int:
    """The table's schema version at a snapshot, from ``(begin_snapshot, schema_version)``."""
    version = 0
    for begin, value in ranges:
        if begin <= begin_snapshot:
            version = value
    return version


def candidates(lake: Catalog, conn: Connection, table_id: int, at: int) -> list[SourceFile]:
    """Live data files of a table at ``at``, in DuckDB's compaction order."""
    versions = cast("Sequence[tuple[int, int]]", conn.execute(
        text(f"SELECT begin_snapshot, schema_version FROM {lake.t('ducklake_schema_versions')} "
             "WHERE table_id = :t ORDER BY begin_snapshot"), {"t": table_id}).all())
    ranges = [(int(b), int(v)) for b, v in versions]
    files = lake.data_files(table_id, at, conn)
    deletes = lake.delete_files(table_id, at, conn)
    inlined = inlined_data.read_file_deletes(lake, conn, table_id, at)
    values: dict[int, dict[int, str | None]] = {}
    partition_values = cast("Sequence[tuple[int, int, str | None]]", conn.execute(
        text(f"SELECT data_file_id, partition_key_index, partition_value FROM "
             f"{lake.t('ducklake_file_partition_value')} WHERE table_id = :t"),
        {"t": table_id}).all())
    for fid, index, value in partition_values:
        values.setdefault(int(fid), {})[int(index)] = value
    out = []
    for f in files:
        keys = values.get(f.data_file_id, {})
        out.append(SourceFile(
            f, schema_version_of(ranges, f.begin_snapshot),
            tuple(keys[i] for i in sorted(keys)), deletes.get(f.data_file_id),
            len(inlined.get(f.data_file_id, []))))
    out.sort(key=lambda s: (s.data_file.begin_snapshot,
                            -1 if s.data_file.row_id_start is None else s.data_file.row_id_start,
                            s.data_file.data_file_id))
    return out


def merge_groups(
    files: Sequence[SourceFile], target_file_size: int, min_file_size: int | None = None,
    max_file_size: int | None = None, max_compacted_files: int | None = None,
) -> list[list[SourceFile]]:
    """Runs of adjacent small files to merge, each into one file, as DuckDB packs them."""
    limit = max_file_size if max_file_size is not None else target_file_size
    by_group: dict[tuple[object, ...], list[SourceFile]] = {}
    for f in files:
        size = f.data_file.file_size_bytes
        if f.delete_file is not None or f.inlined_deletes or f.data_file.end_snapshot is not None:
            continue
        if size >= limit or size >= target_file_size:
            continue
        if min_file_size is not None and size < min_file_size:
            continue
        by_group.setdefault(f.group_key, []).append(f)
    out: list[list[SourceFile]] = []
    budget = max_compacted_files if max_compacted_files is not None else float("inf")
    counted = 0
    for group in by_group.values():
        if len(group) < 2:
            continue
        start = 0
        while start < len(group) and counted < budget:
            total, end = 0, start
            while end < len(group) and total < target_file_size:
                total += group[end].data_file.file_size_bytes
                end += 1
            if end - start >= 2:
                out.append(list(group[start:end]))
                start = end
            else:
                start += 1
            counted += 1
        if counted >= budget:
            break
    return out


def rewrite_groups(files: Sequence[SourceFile], threshold: float) -> list[list[SourceFile]]:
    """Files whose deleted fraction reaches ``threshold``, one group per partition."""
    by_group: dict[tuple[object, ...], list[SourceFile]] = {}
    for f in files:
        if f.deleted == 0 or f.data_file.record_count == 0:
            continue
        if f.deleted / f.data_file.record_count >= threshold:
            by_group.setdefault(f.group_key, []).append(f)
    return list(by_group.values())


def sort_keys(lake: Catalog, conn: Connection, table_id: int, at: int) -> list[SortKey]:
    """The table's live sort order (``ALTER TABLE ... SET SORTED BY`` in DuckDB)."""
    row = conn.execute(
        text(f"SELECT sort_id FROM {lake.t('ducklake_sort_info')} WHERE table_id = :t AND "
             "begin_snapshot <= :s AND (end_snapshot IS NULL OR :s < end_snapshot)"),
        {"t": table_id, "s": at}).first()
    if row is None:
        return []
    rows = cast("Sequence[tuple[str, str | None, str | None, str | None]]", conn.execute(
        text(f"SELECT expression, dialect, sort_direction, null_order FROM "
             f"{lake.t('ducklake_sort_expression')} WHERE sort_id = :i AND table_id = :t "
             "ORDER BY sort_key_index"), {"i": row[0], "t": table_id}).all())
    return [SortKey(e, d or "duckdb", (direction or "").upper() == "DESC",
                    (nulls or "").upper() == "NULLS_FIRST") for e, d, direction, nulls in rows]


def hive_directory(source: DataFile) -> str:
    """The directory of a relative source path (``region=eu/``), where merged output goes."""
    if not source.path_is_relative or "/" not in source.path:
        return ""
    return source.path.rsplit("/", 1)[0] + "/"


def contiguous(sources: Sequence[SourceFile]) -> bool:
    """Whether the sources' row ids run on without gaps (then no row-id column is needed)."""
    previous = None
    for s in sources:
        start = s.data_file.row_id_start
        if start is None:
            return False
        if previous is not None and previous != start:
            return False
        previous = start + s.data_file.record_count
    return True


# ---------------------------------------------------------------------------------- commits
def _check_sources(ctx: CommitContext, table_id: int, sources: Sequence[SourceFile],
                   allow_deletes: bool) -> None:
    """Sources must still be live as planned, or another writer changed them meanwhile."""
    at = ctx.latest.snapshot_id
    live = {f.data_file_id for f in ctx.lake.data_files(table_id, at, ctx.conn)}
    deletes = ctx.lake.delete_files(table_id, at, ctx.conn)
    inlined = inlined_data.read_file_deletes(ctx.lake, ctx.conn, table_id, at)
    for s in sources:
        fid = s.data_file.data_file_id
        now = deletes.get(fid)
        changed = fid not in live or len(inlined.get(fid, [])) != s.inlined_deletes or (
            (now.delete_file_id if now else None)
            != (s.delete_file.delete_file_id if s.delete_file else None))
        if changed or (not allow_deletes and (now is not None or inlined.get(fid))):
            raise CommitConflictError(
                f"data file {fid} changed while it was being compacted (another writer deleted "
                "from or rewrote it); nothing was committed, rerun the compaction")


def _remove_files(ctx: CommitContext, table: TableInfo, schema: SchemaInfo,
                  sources: Sequence[SourceFile]) -> None:
    """Drop merged sources from the catalog and schedule their files, as DuckDB does."""
    table_dir = ctx.lake.table_dir(schema, table)
    for s in sources:
        fid = s.data_file.data_file_id
        for name in ("ducklake_data_file", "ducklake_file_column_stats",
                     "ducklake_file_partition_value", "ducklake_file_variant_stats"):
            ctx.exec(f"DELETE FROM {ctx.t(name)} WHERE data_file_id = :d", {"d": fid})
        schedule_for_deletion(ctx, fid, table_dir, s.data_file.path, s.data_file.path_is_relative)


def stage_merge(tx: Transaction, table_id: int,
                merges: Sequence[tuple[Sequence[SourceFile], NewDataFile]]) -> None:
    """Stage replacing each run of sources with its merged file (token ``merge_adjacent``)."""

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(TableRef(table_id))
        schema = ctx.lake.schema(table.schema_name, ctx.latest.snapshot_id, ctx.conn)
        columns = ctx.lake.columns(table_id, ctx.snapshot_id, ctx.conn)
        for sources, merged in merges:
            _check_sources(ctx, table_id, sources, allow_deletes=False)
            register_files(ctx, table, columns, [merged])
            _remove_files(ctx, table, schema, sources)
        ctx.change(14, f"{MERGE_TOKEN}:{table_id}")

    tx.add(DATA, op, f"{MERGE_TOKEN}:{table_id}")


def stage_rewrite(tx: Transaction, table_id: int,
                  rewrites: Sequence[tuple[Sequence[SourceFile], Sequence[NewDataFile]]]) -> None:
    """Stage ending heavily deleted files (and their delete files) and adding their live rows
    as new files that begin now (token ``rewrite_delete``)."""

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(TableRef(table_id))
        columns = ctx.lake.columns(table_id, ctx.snapshot_id, ctx.conn)
        for sources, written in rewrites:
            _check_sources(ctx, table_id, sources, allow_deletes=True)
            if written:
                register_files(ctx, table, columns, list(written))
            for s in sources:
                params = {"s": ctx.snapshot_id, "d": s.data_file.data_file_id}
                ctx.exec(f"UPDATE {ctx.t('ducklake_data_file')} SET end_snapshot = :s "
                         "WHERE data_file_id = :d AND end_snapshot IS NULL", params)
                ctx.exec(f"UPDATE {ctx.t('ducklake_delete_file')} SET end_snapshot = :s "
                         "WHERE data_file_id = :d AND end_snapshot IS NULL", params)
        ctx.change(15, f"{REWRITE_TOKEN}:{table_id}")

    tx.add(DELETES, op, f"{REWRITE_TOKEN}:{table_id}")


def absolute_path(lake: Catalog, schema: SchemaInfo, table: TableInfo, data_file: DataFile) -> str:
    return join_path(lake.table_dir(schema, table), data_file.path, data_file.path_is_relative)


__all__ = [
    "SortKey",
    "SourceFile",
    "candidates",
    "contiguous",
    "merge_groups",
    "rewrite_groups",
    "sort_keys",
    "stage_merge",
    "stage_rewrite",
]
