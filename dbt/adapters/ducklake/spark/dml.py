"""Writes that change a table's rows: INSERT, overwrite, replacement (with the columns and the
partitioning evolved in the same snapshot), REPLACE WHERE/ON/USING, DELETE and UPDATE (MERGE
is beside them in :mod:`.merge`).

Each write plans against one :class:`~.table_state.TableState`, stages its deletes and new rows on
one :class:`~..lake.commit.Transaction`, and commits it as one DuckLake snapshot. Deletes are
positional (delete files, or inlined deletes when small); new rows are inlined or written as
Parquet by :func:`stage_insert`. Rows another writer inserts while a DELETE, UPDATE or
replacement runs are handled by a re-plan at commit (``Transaction.replanner``).

The public face of these writes is :class:`~.lake.LakeTable`; this module takes a
:class:`Target` so that it needs nothing of the façade.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from sqlalchemy import text as sql_text

from ..lake import data_files, delete_files, evolution, tables
from ..lake import files as lake_files
from ..lake import options as lake_options
from ..lake.catalog import Catalog
from ..lake.commit import Transaction
from ..lake.compaction import SortKey, sort_keys
from ..lake.delete_files import ROW_ID_COLUMN
from ..lake.errors import InvalidArgumentError, SchemaMismatchError
from ..lake.inlining.rows import can_inline
from ..lake.models import ColumnInfo, PublishReplan, Snapshot, TableRef
from ..lake.partitions import (
    PartitionField,
    PartitionKey,
    describe,
    keys_of_spec,
    parse_partition_by,
    reset_partitioning,
    resolve,
    set_partitioning,
)
from ..lake.sort_order import stage_sort_order
from ..lake.streams import StreamBatch
from . import expressions as sql
from . import write as spark_write
from .constraints import NO_CONSTRAINTS, TableConstraints, as_frame, enforce, post_image
from .read import FILE_ID, POSITION, ROW_ID, scan, scan_inserted
from .sorting import sort_arrow, spark_order
from .table_state import TableState, load_state
from .types import column_specs, spark_type


@dataclass(frozen=True)
class CommitInfo:
    """Who and why, stored with the snapshot (``author``, ``commit_message``, extra JSON)."""

    author: str | None = None
    message: str | None = None
    extra_info: str | dict[str, Any] | None = None
    # a stream's micro-batch: the commit lands at most once (:mod:`..lake.streams`)
    batch: StreamBatch | None = None


def commit(tx: Transaction, info: CommitInfo) -> Snapshot:
    """Commit ``tx`` as one snapshot carrying ``info``; with ``info.batch``, only if that
    batch is not in the lake yet (else the snapshot that holds it, ``tx.replayed``)."""
    if info.batch is not None:
        tx.once(info.batch)
    return tx.commit(info.author, info.message, info.extra_info)


class LakeWriter(Protocol):
    """What maintenance needs of a :class:`~.lake.SparkLake`: its session, its catalog, and
    its commit (with the lake's own commit information when given none). A protocol, so that
    the modules below the façade need not import it."""

    spark: SparkSession
    catalog: Catalog

    def commit(self, tx: Transaction, info: CommitInfo | None = None) -> Snapshot: ...


@dataclass(frozen=True)
class Target:
    """The table a write changes, and what writing it needs: the session, the catalog and
    the commit information used when a write is given none."""

    spark: SparkSession
    lake: Catalog
    schema_name: str
    table_name: str
    commit_info: CommitInfo
    # checked over the table as each write would leave it, before its commit
    constraints: TableConstraints = NO_CONSTRAINTS
    # the table's own options (normalised): new files follow them, and the commit stores
    # those the catalog does not hold yet (a dbt model's table_options)
    options: Mapping[str, str] = field(default_factory=dict)
    # the table's sort order, set with the writes' commits where it differs (None: the
    # table's own, unchanged); new files are sorted by it
    sorted_by: tuple[SortKey, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.schema_name}.{self.table_name}"

    def enforce(self, state: TableState,
                positions: Mapping[int, delete_files.Positions] | None,
                inlined: Sequence[int], *added: DataFrame | pa.Table | None) -> None:
        """Check :attr:`constraints` over the table as a write would leave it: the rows of
        ``state`` less those at ``positions`` and ``inlined``, plus ``added``
        (:func:`.constraints.post_image`). Raises before anything is committed."""
        if self.constraints:
            enforce(self.constraints, post_image(self.spark, state, positions, inlined, added),
                    self.name)

    def state(self, at: int | None = None, contents: bool = True) -> TableState:
        return load_state(self.lake, self.schema_name, self.table_name, at, contents)

    def partition_keys(self, at: int | None = None) -> tuple[PartitionKey, ...]:
        """The partition spec live at snapshot ``at`` (the latest by default) resolved to
        columns; empty when the table is not partitioned."""
        lake = self.lake
        with lake.read() as conn:
            at = at if at is not None else lake.latest_snapshot(conn).snapshot_id
            table = lake.table(self.schema_name, self.table_name, at, conn)
            spec = lake.partition_spec(table.table_id, at, conn)
            if spec is None:
                return ()
            return keys_of_spec(spec, lake.columns(table.table_id, at, conn))

    def transaction(self, state: TableState) -> Transaction:
        """A transaction based on the snapshot ``state`` was read at, so that the commit
        sees every snapshot committed since as a possible conflict."""
        return Transaction(self.lake, self.lake.snapshot(version=state.snapshot_id))

    def commit(self, tx: Transaction, info: CommitInfo | None) -> Snapshot:
        if self.options and not tx.empty:
            with self.lake.read() as conn:
                table_id = self.lake.table(self.schema_name, self.table_name, conn=conn).table_id
                stored = lake_options.table_scope_options(self.lake, conn, table_id)
            tables.stage_table_options(tx, TableRef(table_id), {
                k: v for k, v in self.options.items() if stored.get(k) != v})
        if self.sorted_by is not None and not tx.empty:
            with self.lake.read() as conn:
                table_id = self.lake.table(self.schema_name, self.table_name, conn=conn).table_id
                live = sort_keys(self.lake, conn, table_id,
                                 self.lake.latest_snapshot(conn).snapshot_id)
            if list(self.sorted_by) != live:
                stage_sort_order(tx, TableRef(table_id), self.sorted_by)
        return commit(tx, info or self.commit_info)

    def inserted_meanwhile(self, since: Snapshot, until: Snapshot) -> DataFrame:
        """The rows snapshots ``since < s <= until`` inserted, with the metadata columns: what
        a statement planned at ``since`` must still apply itself to when it commits later
        (``Transaction.replanner``)."""
        state = self.state(until.snapshot_id)
        return scan_inserted(self.spark, state, since.snapshot_id)

    def stage(self, tx: Transaction, state: TableState, df: DataFrame | pa.Table,
              columns: list[ColumnInfo] | None = None, **options: Any) -> int:
        """:func:`stage_insert` of ``df`` into this table as read in ``state``."""
        columns = state.columns if columns is None else columns
        return stage_insert(self.spark, self.lake, tx, TableRef(state.table.table_id), df,
                            state.table_dir, columns, state.schema.schema_id,
                            state.table.table_id,
                            inline_ok=can_inline(columns, self.lake.dialect),
                            table_options=self.options, sorted_by=self.sorted_by, **options)


def stage_insert(
    spark: SparkSession, lake: Catalog, tx: Transaction, ref: TableRef,
    df: DataFrame | pa.Table, table_dir: str, columns: list[ColumnInfo], schema_id: int,
    table_id: int | None, inline_ok: bool, replace: bool = False, row_ids: bool = False,
    inlined_row_ids: list[int] | None = None,
    partition_keys: Sequence[PartitionKey] | None = None,
    table_options: Mapping[str, str] | None = None,
    sorted_by: Sequence[SortKey] | None = None,
) -> int:
    """Stage the rows of ``df`` on ``tx`` as inlined rows or Parquet files; returns rows.

    Files follow ``partition_keys``, by default the table's live partition spec (the
    commit refuses them if the spec changes meanwhile). Inlined rows have no partition.
    ``table_options`` (the table's own, stored with this commit) take precedence over the
    options the catalog holds, and ``sorted_by`` over its sort order: files are written
    sorted by it.
    """
    with lake.read() as conn:
        limit = lake_options.inlining_row_limit(lake, conn, schema_id, table_id, table_options)
        order = write_order(lake, conn, schema_id, table_id, sorted_by, table_options)
    if isinstance(df, pa.Table) and inline_ok and limit > 0 and df.num_rows <= limit:
        # Driver-side rows within the limit: inlined without a Spark job (and without the
        # catalog reads only a file write needs: a streaming commit is latency).
        rows = spark_write.conform_arrow(df, columns, row_ids=row_ids)
        spark_write.check_not_null(rows, columns)
        return _register(tx, ref, rows, [], row_ids, replace, inlined_row_ids)
    parquet, keys = _file_settings(lake, schema_id, table_id, columns, partition_keys,
                                   table_options)
    if isinstance(df, pa.Table):
        if spark_write.writes_on_driver(columns, keys):
            # More driver-side rows: one file written on the driver, still no Spark job.
            staged = spark_write.stage_rows(
                spark, sort_arrow(spark_write.conform_arrow(df, columns, row_ids=row_ids),
                                  order, columns), table_dir, columns, parquet=parquet)
            _, new_files = _inline_or_publish(tx, staged, table_dir, columns, False, limit,
                                              row_ids)
            return _register(tx, ref, None, new_files, row_ids, replace, inlined_row_ids)
        df = spark.createDataFrame(df, schema=from_arrow_schema(
            df.schema, prefer_timestamp_ntz=True))
    conformed = spark_write.conform(df, columns, row_ids=row_ids)
    if inline_ok and limit > 0 and df.isLocal():
        local = spark_write.local_rows(conformed)
        if local.num_rows <= limit:
            spark_write.check_not_null(local, columns)
            return _register(tx, ref, local, [], row_ids, replace, inlined_row_ids)
    staged = spark_write.stage(spark, conformed, table_dir, columns, row_ids, keys,
                               parquet=parquet, sort_by=spark_order(order, columns))
    rows, new_files = _inline_or_publish(tx, staged, table_dir, columns, inline_ok, limit,
                                         row_ids)
    return _register(tx, ref, rows, new_files, row_ids, replace, inlined_row_ids)


def writes_on_driver(target: Target, state: TableState) -> bool:
    """Whether rows of the table collected on the driver are written there too
    (:func:`.write.writes_on_driver`: no partition keys, no physically written column)."""
    _, keys = _file_settings(target.lake, state.schema.schema_id, state.table.table_id,
                             state.columns, None)
    return spark_write.writes_on_driver(state.columns, keys)


def _inline_or_publish(tx: Transaction, staged: spark_write.StagedWrite, table_dir: str,
                       columns: list[ColumnInfo], inline_ok: bool, limit: int, row_ids: bool,
                       ) -> tuple[pa.Table | None, list[data_files.NewDataFile]]:
    """The rows of ``staged`` to inline when within the inlining ``limit``, else its files,
    published into the table (and recorded on ``tx``)."""
    if inline_ok and limit > 0 and staged.row_count <= limit:
        rows = staged.read_rows()
        staged.discard()
        return rows, []
    new_files, paths = staged.publish(table_dir, columns, row_ids=row_ids)
    tx.files_written.extend(paths)
    return None, new_files


def _file_settings(lake: Catalog, schema_id: int, table_id: int | None,
                   columns: list[ColumnInfo], partition_keys: Sequence[PartitionKey] | None,
                   table_options: Mapping[str, str] | None = None,
                   ) -> tuple[lake_options.ParquetOptions, Sequence[PartitionKey]]:
    """The Parquet options a write into the table uses, and its partition keys (the
    table's live partition spec unless ``partition_keys`` are given).

    A ``target_file_size`` set for the table caps the rows of each file Spark writes: the
    size over the bytes a row takes in the table's live files (or, for a table without
    any, an estimate from its column types), so a write's files stay near or below it
    rather than one file per task whatever its size."""
    with lake.read() as conn:
        parquet = lake_options.parquet_options(lake, conn, schema_id, table_id, table_options)
        target_size = lake_options.explicit_target_file_size(lake, conn, schema_id, table_id,
                                                             table_options)
        if target_size is not None:
            parquet = dataclasses.replace(parquet, max_rows_per_file=lake_options.rows_per_file(
                target_size, row_bytes(lake, conn, table_id, columns)))
        if partition_keys is None:
            partition_keys = ()
            if table_id is not None:
                spec = lake.partition_spec(
                    table_id, lake.latest_snapshot(conn).snapshot_id, conn)
                if spec is not None:
                    partition_keys = keys_of_spec(spec, columns)
    return parquet, partition_keys


def write_order(lake: Catalog, conn: Any, schema_id: int | None, table_id: int | None,
                sorted_by: Sequence[SortKey] | None,
                table_options: Mapping[str, str] | None) -> Sequence[SortKey]:
    """The sort order new files of the table are written in: ``sorted_by`` (the order the
    write sets) or the table's live one; none when the ``sort_on_insert`` option is false."""
    sort_on_insert = (table_options or {}).get("sort_on_insert") or lake_options.option(
        lake, conn, "sort_on_insert", schema_id, table_id, "true")
    if sort_on_insert == "false":
        return ()
    if sorted_by is not None:
        return sorted_by
    if table_id is None:
        return ()
    return sort_keys(lake, conn, table_id, lake.latest_snapshot(conn).snapshot_id)


# Bytes a value takes in a Parquet file, by DuckLake type, for a table with no files yet
# (compressed files take less: the cap errs towards smaller files); others count 16.
_TYPE_BYTES = {"boolean": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1,
               "uint16": 2, "uint32": 4, "uint64": 8, "float32": 4, "float64": 8, "date": 4,
               "timestamp": 8, "timestamptz": 8, "decimal": 8}


def row_bytes(lake: Catalog, conn: Any, table_id: int | None,
              columns: Sequence[ColumnInfo]) -> float:
    """The bytes a row takes in the table's live data files, else an estimate from the
    types of ``columns``."""
    if table_id is not None:
        size, rows = conn.execute(sql_text(
            f"SELECT sum(file_size_bytes), sum(record_count) FROM "
            f"{lake.t('ducklake_data_file')} WHERE table_id = :t AND end_snapshot IS NULL"),
            {"t": table_id}).one()
        if rows:
            return float(size) / float(rows)
    return float(sum(_TYPE_BYTES.get(c.type.name, 16) for c in columns
                     if c.parent_column is None) or 16)


def _register(tx: Transaction, ref: TableRef, rows: pa.Table | None,
              new_files: list[data_files.NewDataFile], row_ids: bool, replace: bool = False,
              inlined_row_ids: list[int] | None = None) -> int:
    """Stage the insert (or replacement) of ``rows`` as inlined rows and of ``new_files``;
    returns the rows staged."""
    inlined: list[dict[str, Any]] = []
    ids = inlined_row_ids
    if rows is not None and rows.num_rows:
        inlined = rows.to_pylist()
        if row_ids:
            ids = [r.pop(ROW_ID_COLUMN) for r in inlined]
    if replace:
        data_files.replace(tx, ref, new_files, inlined)
    else:
        data_files.insert(tx, ref, new_files, inlined, ids)
    return len(inlined) + sum(f.record_count for f in new_files)


def stage_kept_and_new(target: Target, tx: Transaction, state: TableState,
                       df: DataFrame) -> tuple[int, int]:
    """Stage rows that keep their row ids (``ROW_ID_COLUMN`` set: a MERGE's updated rows) and
    new rows (NULL there: its inserted rows) with one Spark write instead of one per kind
    (:func:`.write.stage`'s ``split_new_rows``); returns (rows kept, new rows).

    Each kind becomes inlined rows when it is within the table's inlining limit, else files:
    the kept rows' files carry their row ids, the new rows' files none, as two writes would.
    Only for a local data path: elsewhere a file's footer cannot be edited in place, and
    :func:`stage_insert` of each kind does the same.
    """
    lake, table_id, schema_id = target.lake, state.table.table_id, state.schema.schema_id
    columns = state.columns
    ref = TableRef(table_id)
    if not lake_files.is_local(state.table_dir):
        kept = df.where(F.col(ROW_ID_COLUMN).isNotNull())
        new = df.where(F.col(ROW_ID_COLUMN).isNull()).drop(ROW_ID_COLUMN)
        return (target.stage(tx, state, kept, row_ids=True), target.stage(tx, state, new))
    inline_ok = can_inline(columns, lake.dialect)
    with lake.read() as conn:
        limit = lake_options.inlining_row_limit(lake, conn, schema_id, table_id, target.options)
        order = write_order(lake, conn, schema_id, table_id, target.sorted_by, target.options)
    parquet, keys = _file_settings(lake, schema_id, table_id, columns, None, target.options)
    staged = spark_write.stage(target.spark, spark_write.conform(df, columns, row_ids=True),
                               state.table_dir, columns, row_ids=True, partition_keys=keys,
                               parquet=parquet, split_new_rows=True,
                               sort_by=spark_order(order, columns))
    counts = []
    try:
        for new_rows in (False, True):
            rows, new_files = _inline_or_publish(tx, staged.part(new_rows), state.table_dir,
                                                 columns, inline_ok, limit, not new_rows)
            counts.append(_register(tx, ref, rows, new_files, row_ids=not new_rows))
    finally:
        staged.discard()
    return counts[0], counts[1]


def append(target: Target, df: DataFrame | pa.Table, info: CommitInfo | None = None
           ) -> Snapshot | None:
    """INSERT the rows of ``df`` (columns matched by name); ``None`` when it has none."""
    state = target.state(contents=bool(target.constraints))
    target.enforce(state, None, (), df)
    tx = target.transaction(state)
    if target.stage(tx, state, df) == 0:
        return None
    return target.commit(tx, info)


def overwrite(target: Target, df: DataFrame | pa.Table,
              info: CommitInfo | None = None) -> Snapshot:
    """Replace the table's contents with ``df`` in one snapshot, keeping its identity."""
    state = target.state()
    if target.constraints:
        enforce(target.constraints, as_frame(target.spark, df), target.name)
    tx = target.transaction(state)
    target.stage(tx, state, df, replace=True)
    tx.touch_data_files([f.data_file_id for f in state.data_files])
    tx.replanner = replaced_anyway
    return target.commit(tx, info)


def replace(target: Target, df: DataFrame, info: CommitInfo | None = None,
            evolve: bool = True, not_null: Iterable[str] = (),
            partition_by: str | Sequence[str | PartitionField] | None = None,
            ) -> tuple[Snapshot, str | None]:
    """Replace contents and, with ``evolve``, the columns, keeping the table's identity.

    The columns are changed in the same snapshot as the new data (:mod:`..lake.evolution`):
    added and dropped, widened at any depth, struct fields added and dropped. A column whose
    type cannot be widened in place (a narrowing, a changed kind of nested type) becomes a
    new column of the same name; the second value says which, else it is ``None``.
    ``partition_by=None`` keeps the partition spec; a spec sets it and ``[]`` resets it,
    in the same snapshot, and the new files follow it. Column changes, partitioning, the
    new rows and the end of the old ones are staged on one transaction.
    """
    if not evolve and partition_by is None:
        return overwrite(target, df, info), None
    state = target.state()
    current_keys = target.partition_keys(state.snapshot_id)
    wanted_spec: Sequence[str | PartitionField]
    if partition_by is None:
        wanted_spec = describe(current_keys)
    else:
        wanted_spec = list(parse_partition_by(partition_by)) if partition_by else []
    changes = evolution.evolve(
        state.columns, column_specs(df.schema, keep_nullability=False, not_null=not_null)
    ) if evolve else evolution.Evolution()
    dropped = {path[0].lower() for path in changes.drop if len(path) == 1}
    added = {spec.name.lower() for spec in changes.add}
    dropped_keys = [str(k.field) for k in current_keys
                    if k.column.column_name.lower() in dropped - added]
    if dropped_keys and partition_by is None:
        raise SchemaMismatchError(
            f"{target.name} is partitioned by {', '.join(dropped_keys)}, whose column the "
            "new data no longer has; pass partition_by to change the spec")
    enforce(target.constraints, df, target.name)
    tx = target.transaction(state)
    ref = TableRef(state.table.table_id)
    columns = state.columns
    if not changes.empty:
        tables.alter_columns(tx, ref, add=changes.add, drop=changes.drop,
                             retype=changes.retype, nullability=changes.nullability,
                             add_fields=changes.add_fields)
        with target.lake.read() as conn:
            first = target.lake.max_column_id(state.table.table_id, conn) + 1
        columns = evolution.evolved(state.columns, changes, first)
    keys = resolve(parse_partition_by(wanted_spec), columns) if wanted_spec else ()
    if [(k.column.column_id, k.transform_text) for k in keys] != \
            [(k.column.column_id, k.transform_text) for k in current_keys]:
        if keys:
            set_partitioning(tx, ref, wanted_spec)
        else:
            reset_partitioning(tx, ref)
    target.stage(tx, state, df, columns, replace=True, partition_keys=keys)
    tx.touch_data_files([f.data_file_id for f in state.data_files])
    tx.replanner = replaced_anyway
    tx.publish_replan = PublishReplan("CREATE OR REPLACE TABLE", partial(
        _replaced_on_lake, target, TableRef(state.table.table_id)), whole_table=True)
    new_columns = "; ".join(changes.new_columns) or None
    return target.commit(tx, info), new_columns


def replaced_anyway(since: Snapshot, until: Snapshot) -> None:
    """Nothing to plan for rows inserted meanwhile: replacing a table's contents ends every
    data file and inlined row live when it commits (``data_files.end_all``)."""


def _replaced_on_lake(target: Target, ref: TableRef, on: Transaction, lake: Catalog,
                      since: Snapshot, until: Snapshot) -> None:
    """A CREATE OR REPLACE TABLE of a branch, at its publish (``Transaction.publish_replan``):
    the rows others inserted into the lake's table meanwhile are replaced too, as when the
    statement commits late on its own (:func:`replaced_anyway`), and as DuckDB's CREATE OR
    REPLACE TABLE lands over another transaction's inserts (the old table goes, with them)."""
    table = dataclasses.replace(target, lake=lake)
    delete_files.delete(on, ref, *locations(table.inserted_meanwhile(since, until)))


# What a replacement deletes: the target rows (a metadata scan) that the source selects.
ReplacedRows = Callable[[DataFrame, DataFrame], DataFrame]


def replaced_where(where: str | Column) -> ReplacedRows:
    """``REPLACE WHERE pred``: the target rows matching ``where``."""
    test = where if isinstance(where, Column) else F.expr(where)
    return lambda target, _source: target.where(test)


def replaced_on(on: str | Column, target_alias: str, source_alias: str) -> ReplacedRows:
    """``REPLACE ON cond``: the target rows some source row satisfies ``on`` with.

    The source's columns are reachable only through ``source_alias`` (``s.id``), so an
    unqualified column in ``on`` is the table's, as in the WHERE of a DELETE.
    """
    test = on if isinstance(on, Column) else F.expr(on)

    def replaced(target: DataFrame, source: DataFrame) -> DataFrame:
        if source_alias.lower() in {c.lower() for c in target.columns}:
            # A table column named like the alias would make ``s.x`` ambiguous with the
            # struct; join the plain relation instead (unqualified names must then be
            # unambiguous).
            return target.alias(target_alias).join(source.alias(source_alias), on=test,
                                                   how="left_semi")
        packed = source.select(
            F.struct(*[F.col(sql.ident(c)) for c in source.columns]).alias(source_alias))
        return target.alias(target_alias).join(packed, on=test, how="left_semi")

    return replaced


def replaced_using(keys: Iterable[str | Column]) -> ReplacedRows:
    """``REPLACE USING (keys)``: the target rows whose key values occur in the source,
    compared NULL-safely."""
    exprs = [F.col(sql.ident(k)) if isinstance(k, str) else k for k in keys]
    if not exprs:
        raise InvalidArgumentError("REPLACE USING needs at least one key column")
    names = [f"__ducklake_key_{i}" for i in range(len(exprs))]

    def replaced(target: DataFrame, source: DataFrame) -> DataFrame:
        t = target.select("*", *[e.alias(n) for e, n in zip(exprs, names)])
        s = source.select(*[e.alias(n) for e, n in zip(exprs, names)]).distinct()
        cond = [t[n].eqNullSafe(s[n]) for n in names]
        return t.join(s, on=cond, how="left_semi")

    return replaced


def replace_rows(target: Target, df: DataFrame, replaced: ReplacedRows,
                 info: CommitInfo | None = None, cache_source: bool = False
                 ) -> Snapshot | None:
    """Delete the rows ``replaced(target rows, df)`` selects and insert ``df``: one snapshot.

    Both halves are computed against the same table state, so a source that reads the
    table itself (``{{ this }}`` in an incremental model) sees the rows as they were
    before the statement, and nothing is visible until both halves commit together.
    """
    state = target.state()
    source = df.cache() if cache_source else df
    try:
        positions, inlined = locations(replaced(scan(target.spark, state, metadata=True),
                                              source))
        target.enforce(state, positions, inlined, source)
        tx = target.transaction(state)
        ref = TableRef(state.table.table_id)
        if positions or inlined:
            delete_files.delete(tx, ref, positions, inlined)

        def apply(on: Transaction, table: Target, since: Snapshot, until: Snapshot) -> None:
            delete_files.delete(on, ref, *locations(
                replaced(table.inserted_meanwhile(since, until), source)))

        replan_with(tx, target, "REPLACE", apply)
        rows = target.stage(tx, state, source)
        if rows == 0 and not positions and not inlined:
            return None
        return target.commit(tx, info)
    finally:
        if cache_source:
            source.unpersist()


def delete(target: Target, where: str | Column | None = None,
           info: CommitInfo | None = None, alias: str | None = None) -> Snapshot | None:
    """DELETE the rows matching ``where`` (all rows when ``None``); ``None`` if none match.

    Rows another writer inserts meanwhile are deleted too when they match: the commit
    lands on the newer snapshot (``Transaction.replanner``) instead of failing."""
    state = target.state()
    positions, inlined = locations(_matching(scan(target.spark, state, metadata=True),
                                             where, alias))
    if not positions and not inlined:
        return None
    tx = target.transaction(state)
    ref = TableRef(state.table.table_id)
    delete_files.delete(tx, ref, positions, inlined)

    def apply(on: Transaction, table: Target, since: Snapshot, until: Snapshot) -> None:
        delete_files.delete(on, ref, *locations(
            _matching(table.inserted_meanwhile(since, until), where, alias)))

    replan_with(tx, target, "DELETE", apply)
    return target.commit(tx, info)


def update(target: Target, set: Mapping[str, str | Column],  # noqa: A002 - SQL's word
           where: str | Column | None = None, info: CommitInfo | None = None,
           alias: str | None = None) -> Snapshot | None:
    """UPDATE ... SET col = expr WHERE ...; updated rows keep their row ids.

    Rows another writer inserts meanwhile are updated too when they match (see
    :func:`delete`)."""
    state = target.state()
    names = {c.column_name.lower(): c.column_name for c in state.columns}
    unknown = [k for k in set if k.lower() not in names]
    if unknown:
        raise SchemaMismatchError(
            f"cannot update unknown column(s) {', '.join(unknown)}; the table has "
            + ", ".join(c.column_name for c in state.columns))
    exprs = {names[k.lower()]: (v if isinstance(v, Column) else F.expr(v))
             for k, v in set.items()}
    tx = target.transaction(state)
    ref = TableRef(state.table.table_id)

    def stage(on: Transaction, table: Target, rows: DataFrame, first: bool = False) -> bool:
        """Stage on ``on`` the update of the rows of ``rows`` that match; ``False`` if
        none."""
        cache, df = sql.cached(_matching(rows, where, alias))
        try:
            positions, inlined = locations(df)
            if not positions and not inlined:
                return False
            # SET values are cast to the column types, as Spark's (ANSI) store
            # assignment does: a value that does not fit fails the statement.
            new = df.select(
                *[(exprs[c.column_name].cast(spark_type(c)) if c.column_name in exprs
                   else F.col(sql.ident(c.column_name))).alias(c.column_name)
                  for c in state.columns],
                F.col(ROW_ID).alias(ROW_ID_COLUMN))
            if first:  # the statement's own rows, not a re-plan's
                table.enforce(state, positions, inlined, new)
            delete_files.delete(on, ref, positions, inlined)
            table.stage(on, state, new, row_ids=True)
            return True
        finally:
            cache.unpersist()

    if not stage(tx, target, scan(target.spark, state, metadata=True), first=True):
        return None

    def apply(on: Transaction, table: Target, since: Snapshot, until: Snapshot) -> None:
        stage(on, table, table.inserted_meanwhile(since, until))

    replan_with(tx, target, "UPDATE", apply)
    return target.commit(tx, info)


# A statement's re-plan for rows inserted by snapshots ``since < s <= until``, staged on a
# transaction, reading the rows through a Target (the statement's own, or the same table on
# the lake a branch publishes to)
Apply = Callable[[Transaction, Target, Snapshot, Snapshot], None]


def replan_with(tx: Transaction, target: Target, statement: str, apply: Apply) -> None:
    """Set ``tx``'s re-plan for rows others insert before it commits
    (``Transaction.replanner``) and, in a branch, for rows others insert into the lake
    before the branch publishes (``Transaction.publish_replan``): the same ``apply``,
    reading the rows from the statement's catalog or from the lake's."""
    tx.replanner = partial(apply, tx, target)
    tx.publish_replan = PublishReplan(
        statement, lambda on, lake, since, until: apply(
            on, dataclasses.replace(target, lake=lake), since, until))


def _matching(df: DataFrame, where: str | Column | None, alias: str | None) -> DataFrame:
    """The rows of a metadata scan a DELETE or UPDATE applies to."""
    if alias:
        df = df.alias(alias)
    if where is not None:
        df = df.where(where if isinstance(where, Column) else F.expr(where))
    return df


def locations(df: DataFrame) -> tuple[dict[int, delete_files.Positions], list[int]]:
    """Data file positions and inlined row ids of the rows of a metadata scan."""
    return arrow_locations(df.select(FILE_ID, POSITION, ROW_ID).toArrow())


def arrow_locations(table: pa.Table) -> tuple[dict[int, delete_files.Positions], list[int]]:
    """Data file positions (ascending) and inlined row ids from (file id, position, row id)
    columns. Vectorised: a MERGE or UPDATE at scale locates hundreds of thousands of rows,
    which a loop over Python values took a tenth of a second to sort out."""
    located = pc.is_valid(table.column(0))
    inlined = pc.filter(table.column(2), pc.invert(located)).to_pylist()
    file_ids = pc.filter(table.column(0), located).to_numpy()
    positions = pc.filter(table.column(1), located).to_numpy()
    order = np.lexsort((positions, file_ids))
    file_ids, positions = file_ids[order], positions[order]
    starts = np.flatnonzero(np.diff(file_ids)) + 1
    return ({int(ids[0]): part for ids, part in
             zip(np.split(file_ids, starts), np.split(positions, starts)) if len(ids)},
            inlined)
