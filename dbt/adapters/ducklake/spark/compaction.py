"""Flush, merge and rewrite with Spark: the data half of DuckLake's compaction functions.

The catalog half (what to compact, and the commit) lives in :mod:`..lake.compaction` and
:mod:`..lake.inlining.flush`. Here Spark reads the rows, with their row ids and inserting
snapshots, and writes the new Parquet files with the hidden ``_ducklake_internal_row_id`` and
``_ducklake_internal_snapshot_id`` columns DuckDB writes, so that every snapshot and every
change-feed range reads the same rows afterwards, through either engine.

Each table is compacted in its own snapshot; a table whose ``auto_compact`` option is false is
skipped, as DuckDB skips it.

Columns whose DuckDB type Spark has no type for (uuid, time, timetz, timestamp_ns, the unsigned
integers, (u)hugeint) are carried in their Parquet form and written as DuckDB writes them
(:mod:`.physical`); files with a uuid are written by pyarrow on the driver. A table with a type
no file of ours can carry (interval, time_ns, variant, geometry) is skipped with a log line
rather than failing the whole run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ..lake import compaction as lake_compaction
from ..lake import files as lake_files
from ..lake import options as lake_options
from ..lake.commit import Transaction
from ..lake.compaction import SourceFile
from ..lake.delete_files import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN
from ..lake.errors import InvalidArgumentError, NotFoundError, UnsupportedTypeError
from ..lake.inlining import rows as inlined_data
from ..lake.inlining.flush import FlushedFile, stage_flush
from ..lake.models import ColumnInfo, NewDataFile, TableInfo
from ..lake.partitions import keys_of_spec
from . import physical
from . import write as spark_write
from .dml import LakeWriter
from .expressions import ident
from .read import ROW_ID, SNAPSHOT_ID, local_frame, scan
from .sorting import spark_order
from .table_state import TableState, load_state
from .types import spark_type

log = logging.getLogger("dbt.adapters.ducklake")


@dataclass(frozen=True)
class TableFlush:
    """Inlined rows of one table moved to Parquet, in snapshot ``snapshot_id``."""

    schema_name: str
    table_name: str
    rows_flushed: int
    files_written: int
    deletes_flushed: int
    snapshot_id: int


@dataclass(frozen=True)
class FlushResult:
    """What ``flush_inlined_data`` did, per table (tables with nothing inlined are absent)."""

    tables: tuple[TableFlush, ...]

    @property
    def rows_flushed(self) -> int:
        return sum(t.rows_flushed for t in self.tables)

    def summary(self) -> str:
        return (f"flush_inlined_data: flushed {self.rows_flushed} row(s) of "
                f"{len(self.tables)} table(s) into "
                f"{sum(t.files_written for t in self.tables)} file(s)")


@dataclass(frozen=True)
class TableCompaction:
    """Files of one table replaced by new ones, in snapshot ``snapshot_id``."""

    schema_name: str
    table_name: str
    files_processed: int
    files_created: int
    snapshot_id: int


@dataclass(frozen=True)
class CompactionResult:
    """What ``merge_adjacent_files`` or ``rewrite_data_files`` did, per table."""

    operation: str
    tables: tuple[TableCompaction, ...]
    skipped: tuple[str, ...] = ()  # tables left alone, with the reason

    @property
    def files_processed(self) -> int:
        return sum(t.files_processed for t in self.tables)

    @property
    def files_created(self) -> int:
        return sum(t.files_created for t in self.tables)

    def summary(self) -> str:
        skipped = f"; skipped {len(self.skipped)}" if self.skipped else ""
        return (f"{self.operation}: replaced {self.files_processed} file(s) with "
                f"{self.files_created} in {len(self.tables)} table(s){skipped}")


# ---------------------------------------------------------------------------------- helpers
def select_tables(slake: LakeWriter, schema: str | None, table: str | None) -> list[TableInfo]:
    """One table, the tables of one schema, or every table of the lake."""
    lake = slake.catalog
    if table is not None:
        return [lake.table(schema or "main", table)]
    if schema is not None:
        lake.schema(schema)  # raises NotFoundError naming the schema
    return lake.tables(schema)


def _hidden_columns(path: str) -> tuple[list[int], list[int]]:
    """The row ids (empty when not written) and snapshot ids of a staged file, in file order."""
    metadata, _, _ = lake_files.read_footer(path)
    names = [n for n in (ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN) if n in metadata.schema.names]
    table = lake_files.read_table(path, columns=names)

    def ids(name: str) -> list[int]:
        return table.column(name).to_pylist() if name in names else []

    return ids(ROW_ID_COLUMN), ids(SNAPSHOT_ID_COLUMN)


def _write(slake: LakeWriter, state: TableState, df: DataFrame, columns: Sequence[ColumnInfo],
           row_ids: bool, snapshot_ids: bool, sort_by: Sequence[Column],
           parquet: lake_options.ParquetOptions,
           partition_keys: Sequence[Any] = (), directory: str = "",
           drop_after_sort: Sequence[str] = (), keep_physical: bool = False,
           ) -> tuple[list[NewDataFile], list[str], list[tuple[list[int], list[int]]]]:
    """Write ``df`` (conformed columns + hidden ones; ``keep_physical``: by
    :func:`.write.conform_physical`) as new files of the table; returns the files, their paths
    and, per file, the row ids and snapshot ids it holds.

    Spark writes the files, unless a column needs pyarrow (:func:`.physical.needs_arrow`) or
    the footers of physically written columns cannot be patched in place (an object store).
    """
    if keep_physical and (physical.needs_arrow(columns)
                          or not lake_files.is_local(state.table_dir)):
        staged = spark_write.stage_arrow(slake.spark, df, state.table_dir, columns, row_ids,
                                         partition_keys, snapshot_ids=snapshot_ids,
                                         parquet=parquet, sort_by=sort_by,
                                         drop_after_sort=drop_after_sort)
    else:
        staged = spark_write.stage(slake.spark, df, state.table_dir, columns, row_ids,
                                   partition_keys, snapshot_ids=snapshot_ids,
                                   parquet=parquet, sort_by=sort_by,
                                   single_file=not partition_keys,
                                   drop_after_sort=drop_after_sort)
    try:
        hidden = [_hidden_columns(p) for p, _, _, _ in staged.files]
    except BaseException:
        staged.discard()
        raise
    files, paths = staged.publish(state.table_dir, columns, row_ids=row_ids,
                                  snapshot_ids=snapshot_ids, directory=directory)
    return files, paths, hidden


def _commit(slake: LakeWriter, tx: Transaction, paths: Sequence[str]) -> int:
    tx.files_written.extend(paths)
    return slake.commit(tx).snapshot_id


# ---------------------------------------------------------------------------------- flush
def flush_inlined_data(slake: LakeWriter, schema: str | None = None,
                       table: str | None = None) -> FlushResult:
    """DuckDB's ``ducklake_flush_inlined_data``: inlined rows and deletes to Parquet."""
    done = []
    for info in select_tables(slake, schema, table):
        try:
            flushed = _flush_table(slake, info)
        except UnsupportedTypeError as exc:
            log.warning("flush_inlined_data: skipped %s.%s: %s", info.schema_name,
                        info.table_name, exc)
            continue
        if flushed is not None:
            done.append(flushed)
    result = FlushResult(tuple(done))
    log.info("%s", result.summary())
    return result


def _flush_table(slake: LakeWriter, info: TableInfo) -> TableFlush | None:
    lake = slake.catalog
    state = load_state(lake, info.schema_name, info.table_name)
    s = state.snapshot_id
    with lake.read() as conn:
        if not lake_options.auto_compact(lake, conn, state.schema.schema_id, info.table_id):
            return None
        blocks = inlined_data.read_rows(lake, conn, info.table_id, "begin_snapshot <= :s",
                                        {"s": s}, exact=True)
        file_deletes = inlined_data.read_file_deletes(lake, conn, info.table_id, s)
        file_deletes = {fid: entries for fid, entries in file_deletes.items()
                        if fid in {f.data_file_id for f in state.data_files}}
        spec = lake.partition_spec(info.table_id, s, conn)
        keys_sorted = lake_compaction.sort_keys(lake, conn, info.table_id, s)
        parquet = lake_options.parquet_options(lake, conn, state.schema.schema_id,
                                               info.table_id)
        tables = [t.table_name for t in lake.inlined_data_tables(info.table_id, conn)]
    if not blocks and not file_deletes:
        return None
    flushed: list[FlushedFile] = []
    paths: list[str] = []
    rows = 0
    for block in blocks:
        columns = list(block.columns)
        keep_physical = physical.needs_physical(columns)
        keys: tuple[Any, ...] = ()
        if spec is not None:
            try:
                keys = keys_of_spec(spec, columns)
            except NotFoundError:
                keys = ()  # a key column this schema version lacks: leave the rows unsplit
        if keep_physical and any(k.column.type.name in physical.WRITTEN_AS for k in keys):
            raise UnsupportedTypeError(
                "the table is partitioned by a column of a type Spark cannot write "
                f"({', '.join(str(k.column.type) for k in keys)})")
        df = _block_frame(slake, block, columns, keep_physical)
        conform = spark_write.conform_physical if keep_physical else spark_write.conform
        conformed = conform(df, columns, row_ids=True, snapshot_ids=True)
        sort_by = [*spark_order(keys_sorted, columns, keep_physical), F.col(ROW_ID_COLUMN),
                   F.col(SNAPSHOT_ID_COLUMN)]
        files, written, hidden = _write(slake, state, conformed, columns, True, True, sort_by,
                                        parquet, partition_keys=keys, keep_physical=keep_physical)
        paths.extend(written)
        ended = {(rid, begin): end for rid, begin, end in
                 zip(block.row_ids, block.begin_snapshots, block.end_snapshots)
                 if end is not None}
        for new, path, (row_ids, snaps) in zip(files, written, hidden):
            deleted = tuple((pos, ended[(rid, snap)])
                            for pos, (rid, snap) in enumerate(zip(row_ids, snaps))
                            if (rid, snap) in ended)
            flushed.append(FlushedFile(
                replace(new, row_id_start=min(row_ids), embeds_row_ids=True,
                        begin_snapshot=min(snaps), partial_max=max(snaps),
                        counts_as_insert=False),
                lake_files.strip_scheme(path), deleted))
            rows += new.record_count
    tx = Transaction(lake, lake.snapshot(version=s))
    stage_flush(tx, info.table_id, s, flushed, tables, file_deletes)
    sid = _commit(slake, tx, paths)
    return TableFlush(info.schema_name, info.table_name, rows, len(flushed),
                      sum(len(v) for v in file_deletes.values()), sid)


def _block_frame(slake: LakeWriter, block: inlined_data.InlinedRows,
                 columns: Sequence[ColumnInfo], keep_physical: bool = False) -> DataFrame:
    """Inlined rows (read ``exact``) as a DataFrame with their row ids and snapshots; with
    ``keep_physical`` in the form a physical scan of Parquet gives (:mod:`.physical`)."""
    schema = StructType([StructField(c.column_name, spark_type(c, physical=keep_physical), True)
                         for c in columns]
                        + [StructField(ROW_ID_COLUMN, LongType(), True),
                           StructField(SNAPSHOT_ID_COLUMN, LongType(), True)])
    convert = [physical.physical_converter(c) if keep_physical else physical.spark_converter(c)
               for c in columns]
    data = [tuple(to(v) for v, to in zip(values, convert)) + (rid, begin)
            for values, rid, begin in zip(block.values, block.row_ids, block.begin_snapshots)]
    return local_frame(slake.spark, data, schema)


# ---------------------------------------------------------------------------------- merge
def merge_adjacent_files(
    slake: LakeWriter, schema: str | None = None, table: str | None = None,
    min_file_size: int | str | None = None, max_file_size: int | str | None = None,
    max_compacted_files: int | None = None,
) -> CompactionResult:
    """DuckDB's ``ducklake_merge_adjacent_files``, with Spark doing the reading and writing."""
    low = None if min_file_size is None else lake_options.parse_size(min_file_size)
    high = None if max_file_size is None else lake_options.parse_size(max_file_size)
    if high is not None and high <= 0:
        raise InvalidArgumentError("max_file_size must be greater than zero")
    if low is not None and high is not None and low >= high:
        raise InvalidArgumentError("min_file_size must be less than max_file_size")
    if max_compacted_files is not None and int(max_compacted_files) <= 0:
        raise InvalidArgumentError("max_compacted_files must be greater than zero")
    return _each_table("merge_adjacent_files", slake, schema, table, lambda info: _merge_table(
        slake, info, low, high, max_compacted_files))


def _each_table(operation: str, slake: LakeWriter, schema: str | None, table: str | None,
                compact: Callable[[TableInfo], TableCompaction | None]) -> CompactionResult:
    """Compact each selected table in its own snapshot; a table with a column type that
    cannot be carried is skipped, and the result says why."""
    done, skipped = [], []
    for info in select_tables(slake, schema, table):
        try:
            result = compact(info)
        except UnsupportedTypeError as exc:
            skipped.append(f"{info.schema_name}.{info.table_name}: {exc}")
            continue
        if result is not None:
            done.append(result)
    out = CompactionResult(operation, tuple(done), tuple(skipped))
    log.info("%s", out.summary())
    return out


def _merge_table(slake: LakeWriter, info: TableInfo, low: int | None, high: int | None,
                 max_files: int | None) -> TableCompaction | None:
    lake = slake.catalog
    state = load_state(lake, info.schema_name, info.table_name)
    s = state.snapshot_id
    with lake.read() as conn:
        if not lake_options.auto_compact(lake, conn, state.schema.schema_id, info.table_id):
            return None
        target = lake_options.target_file_size(lake, conn, state.schema.schema_id,
                                               info.table_id)
        files = lake_compaction.candidates(lake, conn, info.table_id, s)
        keys = lake_compaction.sort_keys(lake, conn, info.table_id, s)
        parquet = lake_options.parquet_options(lake, conn, state.schema.schema_id,
                                               info.table_id)
    groups = lake_compaction.merge_groups(files, target, low, high, max_files)
    if not groups:
        return None
    merges: list[tuple[Sequence[SourceFile], NewDataFile]] = []
    paths: list[str] = []
    cache: dict[int, list[ColumnInfo]] = {}
    for sources in groups:
        first = sources[0].data_file
        columns = state.columns_at(first.begin_snapshot, cache)
        keep_physical = physical.needs_physical(columns)
        part = _sources_state(state, sources, columns)
        df = scan(slake.spark, part, metadata=True, keep_physical=keep_physical)
        order = spark_order(keys, columns, keep_physical)
        row_ids = bool(order) or not lake_compaction.contiguous(sources) or any(
            _embeds_row_ids(part, s.data_file) for s in sources)
        out = df.select(*[F.col(ident(c.column_name)) for c in columns],
                        F.col(ROW_ID).alias(ROW_ID_COLUMN),
                        F.col(SNAPSHOT_ID).alias(SNAPSHOT_ID_COLUMN))
        conform = spark_write.conform_physical if keep_physical else spark_write.conform
        conformed = conform(out, columns, row_ids=True, snapshot_ids=True)
        # Without a row-id column the row ids are row_id_start + position: keep row-id order.
        new, written, hidden = _write(
            slake, part, conformed, columns, row_ids, True, [*order, F.col(ROW_ID_COLUMN)],
            parquet, directory=lake_compaction.hive_directory(first),
            drop_after_sort=() if row_ids else (ROW_ID_COLUMN,), keep_physical=keep_physical)
        paths.extend(written)
        if len(new) != 1:
            raise AssertionError(f"merging {len(sources)} files wrote {len(new)} files")
        written_ids, _ = hidden[0]
        merged = replace(
            new[0], counts_as_insert=False, embeds_row_ids=row_ids,
            row_id_start=min(written_ids) if row_ids else first.row_id_start,
            begin_snapshot=first.begin_snapshot,
            partial_max=max(s.data_file.partial_max or s.data_file.begin_snapshot
                            for s in sources),
            partition_id=first.partition_id, partition_layout=None,
            partition_values=list(enumerate(sources[0].partition_values)))
        merges.append((sources, merged))
    tx = Transaction(lake, lake.snapshot(version=s))
    lake_compaction.stage_merge(tx, info.table_id, merges)
    sid = _commit(slake, tx, paths)
    return TableCompaction(info.schema_name, info.table_name,
                           sum(len(m[0]) for m in merges), len(merges), sid)


def _embeds_row_ids(state: TableState, data_file: Any) -> bool:
    metadata, _, _ = lake_files.read_footer(state.path_of(data_file))
    return ROW_ID_COLUMN in metadata.schema.names


def _sources_state(state: TableState, sources: Sequence[SourceFile],
                   columns: Sequence[ColumnInfo]) -> TableState:
    """The table state restricted to some files (their deletes too, no inlined rows)."""
    ids = {s.data_file.data_file_id for s in sources}
    return replace(
        state, columns=list(columns),
        data_files=[s.data_file for s in sources],
        delete_files={k: v for k, v in state.delete_files.items() if k in ids},
        inlined_deletes={k: v for k, v in state.inlined_deletes.items() if k in ids},
        inlined=[])


# ---------------------------------------------------------------------------------- rewrite
def rewrite_data_files(slake: LakeWriter, schema: str | None = None, table: str | None = None,
                       delete_threshold: float | None = None) -> CompactionResult:
    """DuckDB's ``ducklake_rewrite_data_files``: rewrite files whose deleted fraction is at
    least ``delete_threshold`` (default: the ``rewrite_delete_threshold`` option, 0.95)."""
    if delete_threshold is not None and not 0 <= float(delete_threshold) <= 1:
        raise InvalidArgumentError("delete_threshold must be between 0 and 1")
    return _each_table("rewrite_data_files", slake, schema, table,
                       lambda info: _rewrite_table(slake, info, delete_threshold))


def _rewrite_table(slake: LakeWriter, info: TableInfo,
                   threshold: float | None) -> TableCompaction | None:
    lake = slake.catalog
    state = load_state(lake, info.schema_name, info.table_name)
    s = state.snapshot_id
    with lake.read() as conn:
        if not lake_options.auto_compact(lake, conn, state.schema.schema_id, info.table_id):
            return None
        if threshold is None:
            threshold = lake_options.rewrite_delete_threshold(
                lake, conn, state.schema.schema_id, info.table_id)
        files = lake_compaction.candidates(lake, conn, info.table_id, s)
        keys = lake_compaction.sort_keys(lake, conn, info.table_id, s)
        parquet = lake_options.parquet_options(lake, conn, state.schema.schema_id,
                                               info.table_id)
    groups = lake_compaction.rewrite_groups(files, float(threshold))
    if not groups:
        return None
    rewrites: list[tuple[Sequence[SourceFile], list[NewDataFile]]] = []
    paths: list[str] = []
    keep_physical = physical.needs_physical(state.columns)
    for sources in groups:
        part = _sources_state(state, sources, state.columns)
        df = scan(slake.spark, part, metadata=True, keep_physical=keep_physical)
        out = df.select(*[F.col(ident(c.column_name)) for c in state.columns],
                        F.col(ROW_ID).alias(ROW_ID_COLUMN))
        conform = spark_write.conform_physical if keep_physical else spark_write.conform
        conformed = conform(out, state.columns, row_ids=True)
        order = [*spark_order(keys, state.columns, keep_physical), F.col(ROW_ID_COLUMN)]
        new, written, _ = _write(slake, part, conformed, state.columns, True, False, order,
                                 parquet,
                                 directory=lake_compaction.hive_directory(sources[0].data_file),
                                 keep_physical=keep_physical)
        paths.extend(written)
        first = sources[0].data_file
        rewrites.append((sources, [
            replace(f, counts_as_insert=False, embeds_row_ids=True, row_id_start=None,
                    partition_id=first.partition_id, partition_layout=None,
                    partition_values=list(enumerate(sources[0].partition_values)))
            for f in new]))
    tx = Transaction(lake, lake.snapshot(version=s))
    lake_compaction.stage_rewrite(tx, info.table_id, rewrites)
    sid = _commit(slake, tx, paths)
    return TableCompaction(info.schema_name, info.table_name,
                           sum(len(r[0]) for r in rewrites),
                           sum(len(r[1]) for r in rewrites), sid)


__all__ = [
    "CompactionResult",
    "FlushResult",
    "TableCompaction",
    "TableFlush",
    "flush_inlined_data",
    "merge_adjacent_files",
    "rewrite_data_files",
]
