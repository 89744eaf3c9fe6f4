"""The Python API: a DuckLake lake seen through a SparkSession.

>>> lake = SparkLake.open(spark, "sqlite:///lake/catalog.sqlite", data_path="lake/data/")
>>> orders = lake.create_table("main.orders", df)
>>> orders.append(more_rows)
>>> orders.update({"status": "'shipped'"}, where="id = 42")
>>> orders.delete("status = 'cancelled'")
>>> orders.read(version=3).show()
>>> lake.snapshots()[-1].changes
['deleted_from_table:1']

Every write method commits exactly one DuckLake snapshot and returns it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..lake import cleanup as lake_cleanup
from ..lake import expiry as lake_expiry
from ..lake import macros as lake_macros
from ..lake import options as lake_options
from ..lake import streams as lake_streams
from ..lake import tables
from ..lake.catalog import Catalog
from ..lake.changes import Bound
from ..lake.cleanup import CleanupResult
from ..lake.commit import Transaction, dir_name, uuid7
from ..lake.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    ReadOnlyError,
)
from ..lake.expiry import ExpireResult
from ..lake.inlining.rows import can_inline
from ..lake.models import (
    ColumnInfo,
    ColumnSpec,
    MacroInfo,
    MacroParameter,
    Snapshot,
    TableInfo,
    TableRef,
    ViewInfo,
)
from ..lake.options import OptionSetting
from ..lake.partitions import (
    PartitionField,
    PartitionKey,
    describe,
    parse_partition_by,
    reset_partitioning,
    resolve,
    set_partitioning,
)
from ..lake.sort_order import kept_sort_order, parse_sorted_by, stage_sort_order
from . import changes as spark_changes
from . import checkpoint as spark_checkpoint
from . import compaction as spark_compaction
from . import dml
from . import read as spark_read
from . import write as spark_write
from .checkpoint import CheckpointResult
from .compaction import CompactionResult, FlushResult
from .constraints import NO_CONSTRAINTS, TableConstraints
from .datasource import make_known as make_format_known
from .dml import CommitInfo
from .merge import MergeClause, MergeResult, run_merge
from .read import read as read_table
from .table_state import TableState, load_state
from .types import column_specs, table_schema

TableName = str | tuple[str, str]
# ``set_comments``: leave the relation's own comment as it is
UNCHANGED = object()
# A partition spec: keys such as ["region", "year(ts)", "bucket(4, id)"] or one string.
PartitionBy = str | Sequence[str | PartitionField]


def split_name(name: TableName) -> tuple[str, str]:
    """``(schema, table)``, ``"schema.table"`` (split at the first dot) or ``"table"`` (in
    schema ``main``). Pass a tuple for names that contain dots."""
    if isinstance(name, tuple):
        if len(name) != 2 or not all(isinstance(p, str) and p for p in name):
            raise InvalidArgumentError(f"table name {name!r} must be (schema, table)")
        return name
    if not name:
        raise InvalidArgumentError("a table name cannot be empty")
    schema, dot, table = name.partition(".")
    return (schema, table) if dot else ("main", schema)


class SparkLake:
    """A DuckLake lake read and written with Spark."""

    def __init__(self, spark: SparkSession, catalog: Catalog,
                 commit_info: CommitInfo | None = None):
        self.spark = spark
        self.catalog = catalog
        self.commit_info = commit_info or CommitInfo()
        spark_write.configure(spark)
        spark_read.configure(spark)
        make_format_known(spark)

    @classmethod
    def open(cls, spark: SparkSession, catalog: str, data_path: str | None = None,
             **options: Any) -> SparkLake:
        """Open (or create) a lake; options are those of :meth:`Catalog.open`."""
        return cls(spark, Catalog.open(catalog, data_path, **options))

    def close(self) -> None:
        self.catalog.close()

    def _check_writable(self, what: str) -> None:
        """Refuse ``what`` on a lake opened to read one snapshot, before it writes or deletes
        a file: the catalog refuses every commit too, but maintenance writes files first and
        cleanup deletes them without one."""
        if self.catalog.read_only_snapshot is not None:
            raise ReadOnlyError.pinned(self.catalog.read_only_snapshot, what)

    # ------------------------------------------------------------------ catalog
    def snapshots(self) -> list[Snapshot]:
        return self.catalog.snapshots()

    def current_snapshot(self) -> Snapshot:
        return self.catalog.latest_snapshot()

    def schemas(self) -> list[str]:
        return [s.schema_name for s in self.catalog.schemas()]

    def tables(self, schema: str | None = None) -> list[str]:
        return [f"{t.schema_name}.{t.table_name}" for t in self.catalog.tables(schema)]

    def table(self, name: TableName) -> LakeTable:
        schema, table = split_name(name)
        self.catalog.table(schema, table)  # raises NotFoundError with a clear message
        return LakeTable(self, schema, table)

    def read(self, name: TableName, version: int | None = None,
             timestamp: datetime | str | None = None) -> DataFrame:
        """The table at a snapshot. With a version or timestamp the name is resolved at that
        snapshot (as DuckDB's ``AT`` does), so renamed and dropped tables read as they were."""
        if version is None and timestamp is None:
            return self.table(name).read()
        return LakeTable(self, *split_name(name)).read(version=version, timestamp=timestamp)

    def commit(self, tx: Transaction, info: CommitInfo | None = None) -> Snapshot:
        return dml.commit(tx, info or self.commit_info)

    def create_schema(self, name: str, if_not_exists: bool = False,
                      info: CommitInfo | None = None) -> Snapshot | None:
        if if_not_exists and name in self.schemas():
            return None
        tx = Transaction(self.catalog)
        tables.create_schema(tx, name, if_not_exists)
        return self.commit(tx, info)

    def drop_schema(self, name: str, cascade: bool = False, if_exists: bool = False,
                    info: CommitInfo | None = None) -> Snapshot | None:
        if if_exists and name not in self.schemas():
            return None
        tx = Transaction(self.catalog)
        tables.drop_schema(tx, name, cascade, if_exists)
        return self.commit(tx, info)

    def create_table(
        self, name: TableName, data: DataFrame | StructType | list[ColumnSpec], *,
        if_not_exists: bool = False, or_replace: bool = False, info: CommitInfo | None = None,
        not_null: Iterable[str] = (), partition_by: PartitionBy | None = None,
        table_options: Mapping[str, Any] | None = None,
        sorted_by: str | Sequence[str] | None = None,
    ) -> LakeTable:
        """Create a table from a schema, or from a DataFrame in one snapshot (CTAS).

        A table built from a DataFrame has nullable columns, except those in ``not_null``,
        whose data is checked before anything is committed; a schema keeps its nullability.
        ``partition_by`` (e.g. ``["region", "year(ts)", "bucket(4, id)"]``) sets the partition
        spec in the same snapshot, so the first data is already laid out by it.
        ``table_options`` (``{"parquet_compression": "zstd"}``: the table's own lake options,
        :data:`..lake.options.TABLE_OPTIONS`) are stored with the same commit, and the first
        data is written by them. ``sorted_by`` (``["id", "ts DESC"]``) is the table's sort
        order (DuckDB's ``SET SORTED BY``), set in the same snapshot; the first data's files
        are written sorted by it.

        ``or_replace`` drops a table or view of that name in the same snapshot: the new table
        (a new table id) keeps a dropped table's comments, tags and table options, and its
        partitioning and sort order unless ``partition_by`` or ``sorted_by`` is given (their
        keys on columns it still has). A failure leaves the old one as it was.
        """
        schema_name, table_name = split_name(name)
        if if_not_exists and f"{schema_name}.{table_name}" in self.tables(schema_name):
            return LakeTable(self, schema_name, table_name)
        df = data if isinstance(data, DataFrame) else None
        if isinstance(data, list):
            specs = data
        elif isinstance(data, DataFrame):
            specs = column_specs(data.schema, keep_nullability=False, not_null=not_null)
        else:
            specs = column_specs(data, not_null=not_null)
        options = lake_options.normalise_table_options(table_options or {})
        order = parse_sorted_by(sorted_by) if sorted_by else ()
        tx = Transaction(self.catalog)
        old = self._replaced(tx, schema_name, table_name) if or_replace else None
        names = {s.name.lower() for s in specs}
        if old is not None and partition_by is None:
            partition_by = [str(k.field) for k in LakeTable(self, schema_name, table_name)
                            .partition_keys() if k.column.column_name.lower() in names]
        if old is not None and sorted_by is None:  # a nested column is no sort key
            order = kept_sort_order(self.catalog, old, {s.name for s in specs if not s.children})
        table_uuid = uuid7()
        ref = tables.create_table(tx, schema_name, table_name, specs, table_uuid=table_uuid)
        if old is not None:
            tables.carry_over(tx, old, ref)
        columns = provisional_columns(specs)
        keys: tuple[PartitionKey, ...] = ()
        if partition_by:
            keys = resolve(set_partitioning(tx, ref, partition_by), columns)
        if df is not None:
            schema = self.catalog.schema(schema_name)
            table_dir = (self.catalog.schema_dir(schema) + dir_name(table_name, table_uuid) + "/")
            dml.stage_insert(self.spark, self.catalog, tx, ref, df, table_dir, columns,
                             schema.schema_id, None,
                             inline_ok=can_inline(columns, self.catalog.dialect),
                             partition_keys=keys, table_options=options, sorted_by=order)
        tables.stage_table_options(tx, ref, options)
        if order:
            stage_sort_order(tx, ref, order)
        self.commit(tx, info)
        return LakeTable(self, schema_name, table_name)

    def _replaced(self, tx: Transaction, schema_name: str, name: str) -> int | None:
        """Stage the drop of the relation called ``name`` for a table created in its place;
        the dropped table's id, if it is a table."""
        kinds = {n.lower(): (k, n) for k, n in self.catalog.relations(schema_name)}
        kind, existing = kinds.get(name.lower(), (None, name))
        if kind == "view":
            tables.drop_view(tx, schema_name, existing)
        elif kind == "table":
            table_id = self.catalog.table(schema_name, existing).table_id
            tables.drop_table(tx, TableRef(table_id))
            return table_id
        return None

    def drop_table(self, name: TableName, if_exists: bool = False,
                   info: CommitInfo | None = None) -> Snapshot | None:
        schema_name, table_name = split_name(name)
        if if_exists and f"{schema_name}.{table_name}" not in self.tables(schema_name):
            return None
        table = self.catalog.table(schema_name, table_name)
        tx = Transaction(self.catalog)
        tables.drop_table(tx, TableRef(table.table_id))
        return self.commit(tx, info)

    def rename_table(self, name: TableName, new_name: TableName,
                     info: CommitInfo | None = None) -> Snapshot:
        schema_name, table_name = split_name(name)
        new_schema, new_table = split_name(new_name) if (
            isinstance(new_name, tuple) or "." in new_name) else (schema_name, new_name)
        table = self.catalog.table(schema_name, table_name)
        tx = Transaction(self.catalog)
        tables.rename_table(tx, TableRef(table.table_id), new_table, new_schema)
        return self.commit(tx, info)

    # ------------------------------------------------------------------ views
    def view(self, name: TableName) -> ViewInfo:
        """The live view of that name (case-insensitive, as DuckDB resolves names)."""
        schema_name, view_name = split_name(name)
        for view in self.catalog.views(schema_name):
            if view.view_name.lower() == view_name.lower():
                return view
        raise NotFoundError(f"view {schema_name}.{view_name} does not exist in the lake")

    def create_view(self, name: TableName, sql: str, *, dialect: str = "spark",
                    column_aliases: Sequence[str] = (), spark_sql: str | None = None,
                    replace: bool = False, info: CommitInfo | None = None) -> Snapshot:
        """``CREATE [OR REPLACE] VIEW``: ``sql`` in ``dialect`` (``duckdb`` views carry their
        Spark text in ``spark_sql`` for our reads). With ``replace`` a view or a table of that
        name is replaced in the same snapshot; without, an existing one is an error."""
        schema_name, view_name = split_name(name)
        kinds = {n.lower(): k for k, n in self.catalog.relations(schema_name)}
        existing = kinds.get(view_name.lower())
        if existing is not None and not replace:
            raise AlreadyExistsError(f"{schema_name}.{view_name} already exists as a {existing}")
        tx = Transaction(self.catalog)
        if existing == "table":
            tables.drop_table(tx, TableRef(None, schema_name, view_name))
        tables.create_view(tx, schema_name, view_name, sql, dialect=dialect,
                           replace=existing == "view", column_aliases=column_aliases,
                           spark_sql=spark_sql)
        return self.commit(tx, info)

    def drop_view(self, name: TableName, if_exists: bool = False,
                  info: CommitInfo | None = None) -> Snapshot | None:
        try:
            view = self.view(name)
        except NotFoundError:
            if if_exists:
                return None
            raise
        tx = Transaction(self.catalog)
        tables.drop_view(tx, view.schema_name, view.view_name)
        return self.commit(tx, info)

    # ------------------------------------------------------------------ functions
    def functions(self, schema_name: str | None = None,
                  version: int | None = None) -> list[MacroInfo]:
        """The lake's SQL functions (DuckLake macros) at ``version`` (latest by default)."""
        with self.catalog.read() as conn:
            at = None if version is None else \
                self.catalog.snapshot(version=version, conn=conn).snapshot_id
            return self.catalog.macros(schema_name, at, conn)

    def create_function(self, name: TableName, duckdb_sql: str,
                        parameters: Sequence[MacroParameter], spark_sql: str, *,
                        replace: bool = False, info: CommitInfo | None = None) -> Snapshot:
        """``CREATE [OR REPLACE] FUNCTION``: a DuckLake macro whose body ``duckdb_sql`` is
        what DuckDB runs, with the Spark definition ``spark_sql`` this engine registers."""
        schema_name, function_name = split_name(name)
        tx = Transaction(self.catalog)
        lake_macros.create_macro(tx, schema_name, function_name, duckdb_sql, parameters,
                                 replace=replace, spark_sql=spark_sql)
        return self.commit(tx, info)

    def drop_function(self, name: TableName, if_exists: bool = False,
                      info: CommitInfo | None = None) -> Snapshot | None:
        schema_name, function_name = split_name(name)
        if not any(m.macro_name.lower() == function_name.lower()
                   for m in self.functions(schema_name)):
            if if_exists:
                return None
            raise NotFoundError(
                f"function {schema_name}.{function_name} does not exist in the lake")
        tx = Transaction(self.catalog)
        lake_macros.drop_macro(tx, schema_name, function_name)
        return self.commit(tx, info)

    def rename_view(self, name: TableName, new_name: TableName,
                    info: CommitInfo | None = None) -> Snapshot:
        """Rename (or move) a view; it keeps its id, so its tags follow it, as in DuckDB."""
        view = self.view(name)
        new_schema, new_view = split_name(new_name) if (
            isinstance(new_name, tuple) or "." in new_name) else (view.schema_name, new_name)
        tx = Transaction(self.catalog)
        tables.rename_view(tx, view, new_view, new_schema)
        return self.commit(tx, info)

    def set_comments(self, name: TableName, comment: str | None | object = UNCHANGED,
                     columns: Mapping[str, str | None] | None = None,
                     info: CommitInfo | None = None) -> Snapshot | None:
        """Set the ``comment`` tags of a table or view (``None`` removes one) and of a
        table's columns, in one snapshot; ``None`` if there is nothing to set. DuckDB shows
        them as ``COMMENT ON``."""
        schema_name, relation = split_name(name)
        tx = Transaction(self.catalog)
        try:
            ref, view_id = TableRef(self.catalog.table(schema_name, relation).table_id), None
        except NotFoundError:
            ref, view_id = TableRef(None), self.view(name).view_id
            if columns:
                raise InvalidArgumentError(
                    f"{schema_name}.{relation} is a view: its columns take no comments"
                ) from None
        if comment is not UNCHANGED:
            tables.set_comment(tx, ref, cast("str | None", comment), view_id=view_id)
        for column, text in (columns or {}).items():
            tables.set_comment(tx, ref, text, column=column)
        return None if tx.empty else self.commit(tx, info)

    # ------------------------------------------------------------------ maintenance
    def flush_inlined_data(self, schema: str | None = None,
                           table: str | None = None) -> FlushResult:
        """Move inlined rows (and inlined deletes) of one table, one schema or every table
        to Parquet, keeping every snapshot and the change feed as they were."""
        self._check_writable("maintenance operation flush_inlined_data")
        return spark_compaction.flush_inlined_data(self, schema, table)

    def merge_adjacent_files(
        self, schema: str | None = None, table: str | None = None, *,
        min_file_size: int | str | None = None, max_file_size: int | str | None = None,
        max_compacted_files: int | None = None,
    ) -> CompactionResult:
        """Merge small files without deletes into files of up to ``target_file_size``, never
        across partitions or schema versions (DuckDB's ``ducklake_merge_adjacent_files``)."""
        self._check_writable("maintenance operation merge_adjacent_files")
        return spark_compaction.merge_adjacent_files(
            self, schema, table, min_file_size, max_file_size, max_compacted_files)

    def rewrite_data_files(self, schema: str | None = None, table: str | None = None, *,
                           delete_threshold: float | None = None) -> CompactionResult:
        """Rewrite files whose deleted fraction reaches ``delete_threshold`` (default: the
        ``rewrite_delete_threshold`` option, 0.95) without their deleted rows."""
        self._check_writable("maintenance operation rewrite_data_files")
        return spark_compaction.rewrite_data_files(self, schema, table, delete_threshold)

    def expire_snapshots(self, older_than: datetime | str | None = None,
                         versions: Sequence[int] | None = None,
                         dry_run: bool = False) -> ExpireResult:
        """Forget snapshots older than ``older_than`` (default: the ``expire_older_than``
        option) or the listed ``versions``; files only they needed are scheduled for
        deletion. Never the latest snapshot."""
        self._check_writable("maintenance operation expire_snapshots")
        return lake_expiry.expire_snapshots(self.catalog, older_than, versions, dry_run)

    def cleanup_old_files(self, older_than: datetime | str | None = None,
                          cleanup_all: bool = False, dry_run: bool = False) -> CleanupResult:
        """Delete files scheduled for deletion before ``older_than`` (default: now minus the
        ``delete_older_than`` option, 2 days), or all of them with ``cleanup_all``."""
        self._check_writable("maintenance operation cleanup_old_files")
        return lake_cleanup.cleanup_old_files(self.catalog, older_than, cleanup_all, dry_run)

    def delete_orphaned_files(self, older_than: datetime | str | None = None,
                              dry_run: bool = False) -> CleanupResult:
        """Delete Parquet files under the data path that the catalog does not know and that
        are older than ``older_than`` (default: now minus ``delete_older_than``)."""
        self._check_writable("maintenance operation delete_orphaned_files")
        return lake_cleanup.delete_orphaned_files(self.catalog, older_than, dry_run)

    def checkpoint(self) -> CheckpointResult:
        """Every maintenance step in DuckDB's ``CHECKPOINT`` order, with the lake's options."""
        self._check_writable("maintenance operation checkpoint")
        return spark_checkpoint.checkpoint(self)

    def set_option(self, key: str, value: Any, schema: str | None = None,
                   table: str | None = None) -> OptionSetting:
        """Set a lake option globally, for a schema or for a table (no snapshot), e.g.
        ``set_option("target_file_size", "64MB", table="orders")``."""
        self._check_writable(f"set_option({key!r})")
        return lake_options.set_option(self.catalog, key, value, schema, table)

    def options(self) -> list[OptionSetting]:
        """Every option set on the lake, with its scope."""
        return lake_options.list_options(self.catalog)



def provisional_columns(specs: list[ColumnSpec], first_id: int = 1) -> list[ColumnInfo]:
    """Column infos with the ids ``create_table`` will assign (``first_id``.., depth-first)."""
    out: list[ColumnInfo] = []
    counter = [first_id]

    def build(spec: ColumnSpec, parent: int | None) -> ColumnInfo:
        cid = counter[0]
        counter[0] += 1
        kids = tuple(build(c, cid) for c in spec.children)
        return ColumnInfo(cid, 0, None, 0, cid, spec.name, spec.type, spec.initial_default,
                          spec.default_value, spec.nulls_allowed, parent, children=kids)

    for spec in specs:
        out.append(build(spec, None))
    return out


class LakeTable:
    """One table of a :class:`SparkLake`; every write commits one snapshot."""

    def __init__(self, lake: SparkLake, schema_name: str, table_name: str,
                 constraints: TableConstraints = NO_CONSTRAINTS,
                 table_options: Mapping[str, Any] | None = None,
                 sorted_by: str | Sequence[str] | None = None) -> None:
        """``constraints`` (CHECK, PRIMARY KEY, UNIQUE) are checked over the table as each
        write of this object would leave it, before its commit (:mod:`.constraints`).
        ``table_options`` (the table's own lake options) shape the files each write makes,
        and are stored with its commit where the catalog holds other values. ``sorted_by``
        (``["id", "ts DESC"]``, ``[]`` for none) is set as the table's sort order with each
        write's commit where it differs; ``None`` leaves the table's own."""
        self._lake = lake
        self.schema_name = schema_name
        self.table_name = table_name
        self.constraints = constraints
        self.table_options = lake_options.normalise_table_options(table_options or {})
        self.sorted_by = None if sorted_by is None else parse_sorted_by(sorted_by)

    @property
    def name(self) -> str:
        return f"{self.schema_name}.{self.table_name}"

    def __repr__(self) -> str:
        return f"LakeTable({self.name!r})"

    def info(self) -> TableInfo:
        return self._lake.catalog.table(self.schema_name, self.table_name)

    def columns(self) -> list[ColumnInfo]:
        return self._lake.catalog.columns(self.info().table_id)

    def schema(self) -> StructType:
        return table_schema(self.columns())

    def alter_columns(
        self, *, add: Sequence[ColumnSpec] = (), drop: Sequence[str] = (),
        rename: Sequence[tuple[str, str]] = (), retype: Sequence[tuple[str, str]] = (),
        nullability: Sequence[tuple[str, bool]] = (),
        comments: Mapping[str, str | None] | None = None, info: CommitInfo | None = None,
    ) -> Snapshot | None:
        """``ALTER TABLE``: add, drop, rename and retype columns (dotted names reach nested
        fields), set their nullability and comments, in one snapshot; ``None`` when nothing
        changes (a column given the type it has)."""
        ref = TableRef(self.info().table_id)
        tx = Transaction(self._lake.catalog)
        for column, comment in (comments or {}).items():
            tables.set_comment(tx, ref, comment, column=column)
        tables.alter_columns(tx, ref, add=add, drop=drop, rename=rename, retype=retype,
                             nullability=nullability)
        return None if tx.empty else self._lake.commit(tx, info)

    # ------------------------------------------------------------------ partitioning
    def partition_keys(self, version: int | None = None) -> tuple[PartitionKey, ...]:
        """The live partition spec resolved to columns (empty when unpartitioned)."""
        return self._target().partition_keys(version)

    def partitioning(self, version: int | None = None) -> list[str]:
        """The partition spec as keys, e.g. ``['region', 'year(ts)', 'bucket(4, id)']``;
        ``[]`` when the table is not partitioned. Accepted back by :meth:`set_partitioning`."""
        return describe(self.partition_keys(version))

    def set_partitioning(self, partition_by: PartitionBy,
                         info: CommitInfo | None = None) -> Snapshot | None:
        """``ALTER TABLE ... SET PARTITIONED BY``: new files follow the spec, existing files
        keep theirs. One snapshot; ``None`` (nothing committed) if the spec is unchanged."""
        state = self.state(contents=False)
        keys = resolve(parse_partition_by(partition_by), state.columns)
        current = self.partition_keys(state.snapshot_id)
        if [(k.column.column_id, k.transform_text) for k in keys] == \
                [(k.column.column_id, k.transform_text) for k in current]:
            return None
        tx = self._target().transaction(state)
        set_partitioning(tx, TableRef(state.table.table_id), partition_by)
        return self._lake.commit(tx, info)

    def reset_partitioning(self, info: CommitInfo | None = None) -> Snapshot | None:
        """``ALTER TABLE ... RESET PARTITIONED BY``; ``None`` if it was not partitioned."""
        state = self.state(contents=False)
        if not self.partition_keys(state.snapshot_id):
            return None
        tx = self._target().transaction(state)
        reset_partitioning(tx, TableRef(state.table.table_id))
        return self._lake.commit(tx, info)

    def state(self, version: int | None = None,
              timestamp: datetime | str | None = None, contents: bool = True) -> TableState:
        at = version
        if timestamp is not None:
            at = self._lake.catalog.snapshot(timestamp=timestamp).snapshot_id
        return load_state(self._lake.catalog, self.schema_name, self.table_name, at, contents)

    def read(self, version: int | None = None, timestamp: datetime | str | None = None,
             metadata: bool = False, where: str | Column | None = None) -> DataFrame:
        """The table at a snapshot (latest, a version, or the latest at a timestamp).

        ``where`` (a SQL condition or a Column) filters the rows and skips the data files
        whose partition values and column statistics rule it out; a ``where``/``filter``
        called on the result does the same.
        """
        return read_table(self._lake.spark, self._lake.catalog, self.state(version, timestamp),
                          metadata=metadata, where=where)

    # ------------------------------------------------------------------ maintenance
    def flush_inlined_data(self) -> FlushResult:
        """Move this table's inlined rows and deletes to Parquet (one snapshot)."""
        return self._lake.flush_inlined_data(self.schema_name, self.table_name)

    def merge_adjacent_files(self, *, min_file_size: int | str | None = None,
                             max_file_size: int | str | None = None,
                             max_compacted_files: int | None = None) -> CompactionResult:
        """Merge this table's small adjacent files (see :meth:`SparkLake.merge_adjacent_files`)."""
        return self._lake.merge_adjacent_files(
            self.schema_name, self.table_name, min_file_size=min_file_size,
            max_file_size=max_file_size, max_compacted_files=max_compacted_files)

    def rewrite_data_files(self, *, delete_threshold: float | None = None) -> CompactionResult:
        """Rewrite this table's heavily deleted files (:meth:`SparkLake.rewrite_data_files`)."""
        return self._lake.rewrite_data_files(self.schema_name, self.table_name,
                                             delete_threshold=delete_threshold)

    def set_option(self, key: str, value: Any) -> OptionSetting:
        """Set a lake option for this table only."""
        return self._lake.set_option(key, value, self.schema_name, self.table_name)

    # ------------------------------------------------------------------ change feed
    def changes(self, start: Bound, end: Bound | None = None) -> DataFrame:
        """DuckDB's ``table_changes``: every insert, delete and update between two snapshots
        (inclusive; ids or timestamps, ``end`` defaults to the latest) as ``snapshot_id``,
        ``rowid``, ``change_type``, then the table's columns as of ``end``."""
        return spark_changes.changes(self._lake.spark, self._sources(start, end))

    def insertions(self, start: Bound, end: Bound | None = None) -> DataFrame:
        """DuckDB's ``table_insertions``: ``snapshot_id``, ``rowid``, then the columns."""
        return spark_changes.insertions(self._lake.spark, self._sources(start, end))

    def deletions(self, start: Bound, end: Bound | None = None) -> DataFrame:
        """DuckDB's ``table_deletions``: ``snapshot_id``, ``rowid``, then the columns."""
        return spark_changes.deletions(self._lake.spark, self._sources(start, end))

    def _sources(self, start: Bound, end: Bound | None) -> spark_changes.ChangeSources:
        if end is None:
            end = self._lake.catalog.latest_snapshot().snapshot_id
        return spark_changes.load_sources(self._lake.catalog, self.schema_name, self.table_name,
                                          start, end)

    def _target(self) -> dml.Target:
        return dml.Target(self._lake.spark, self._lake.catalog, self.schema_name, self.table_name,
                          self._lake.commit_info, self.constraints, self.table_options,
                          self.sorted_by)

    def inserted_meanwhile(self, since: Snapshot, until: Snapshot) -> DataFrame:
        """The rows snapshots ``since < s <= until`` inserted, with the metadata columns: what
        a statement planned at ``since`` must still apply itself to when it commits later
        (``Transaction.replanner``)."""
        return self._target().inserted_meanwhile(since, until)

    # ------------------------------------------------------------------ writing
    def _batch(self, info: CommitInfo | None, stream_id: str | None,
               batch_id: int | None) -> tuple[CommitInfo | None, Snapshot | None]:
        """The commit information of a write that is a stream's micro-batch, and the
        snapshot that already holds the batch (then the write is skipped): see
        :mod:`..lake.streams`. Without ids, ``info`` as it is."""
        if stream_id is None and batch_id is None:
            return info, None
        if stream_id is None or batch_id is None:
            raise InvalidArgumentError("give both stream_id and batch_id, or neither")
        batch = lake_streams.StreamBatch(stream_id, batch_id, self.info().table_id)
        catalog = self._lake.catalog
        with catalog.read() as conn:
            earlier = lake_streams.committed(catalog, conn, batch)
        return dataclasses.replace(info or self._lake.commit_info, batch=batch), earlier

    def append(self, df: DataFrame | pa.Table, info: CommitInfo | None = None, *,
               stream_id: str | None = None, batch_id: int | None = None
               ) -> Snapshot | None:
        """INSERT the rows of ``df`` (columns matched by name).

        ``df`` may be a pyarrow Table of driver-side rows (a streaming micro-batch): within
        the inlining limit it is inlined without a Spark job; larger ones become one file the
        driver writes, or, for a partitioned table or a column written in its physical form
        (:mod:`.physical`), a Spark write like a DataFrame's.

        With ``stream_id`` and ``batch_id`` (``foreachBatch``'s batch id) the write happens
        at most once for that stream and table: a batch the lake holds already is skipped
        and the snapshot holding it returned; an older batch than the stream's latest raises
        :class:`~..lake.streams.StreamCheckpointError` (see ``docs/streaming.md``). The same
        goes for :meth:`overwrite`, :meth:`replace_using` and :meth:`merge`.
        """
        info, earlier = self._batch(info, stream_id, batch_id)
        if earlier is not None:
            return earlier
        return dml.append(self._target(), df, info)

    def overwrite(self, df: DataFrame | pa.Table, info: CommitInfo | None = None, *,
                  stream_id: str | None = None, batch_id: int | None = None) -> Snapshot:
        """Replace the table's contents with ``df`` in one snapshot, keeping its identity."""
        info, earlier = self._batch(info, stream_id, batch_id)
        if earlier is not None:
            return earlier
        return dml.overwrite(self._target(), df, info)

    def replace(self, df: DataFrame, info: CommitInfo | None = None,
                evolve: bool = True, not_null: Iterable[str] = (),
                partition_by: PartitionBy | None = None) -> tuple[Snapshot, str | None]:
        """Replace contents and, with ``evolve``, the columns, keeping the table's identity.

        The columns are changed in the same snapshot as the new data (:mod:`..lake.evolution`):
        added and dropped, widened at any depth, struct fields added and dropped. A column whose
        type cannot be widened in place (a narrowing, a changed kind of nested type) becomes a
        new column of the same name; the second value says which, else it is ``None``.
        ``partition_by=None`` keeps the partition spec; a spec sets it and ``[]`` resets it,
        in the same snapshot, and the new files follow it.
        """
        return dml.replace(self._target(), df, info, evolve, not_null, partition_by)

    def replace_where(self, df: DataFrame, where: str | Column,
                      info: CommitInfo | None = None) -> Snapshot | None:
        """``INSERT INTO t REPLACE WHERE pred``: delete the rows matching ``where`` and insert
        ``df``, in one snapshot (Delta's ``replaceWhere``). Microbatch models use it to replace
        one batch's time window atomically."""
        return dml.replace_rows(self._target(), df, dml.replaced_where(where), info)

    def replace_on(self, df: DataFrame, on: str | Column, target_alias: str | None = None,
                   source_alias: str | None = None,
                   info: CommitInfo | None = None) -> Snapshot | None:
        """``INSERT INTO t REPLACE ON cond``: delete every row for which some row of ``df``
        satisfies ``on``, then insert ``df``, in one snapshot. dbt's ``delete+insert`` is this
        with ``on`` comparing the unique key (plain ``=``: a NULL key matches nothing).

        The source's columns are reachable only through ``source_alias`` (``s.id``), so an
        unqualified column in ``on`` is the table's, as in the WHERE of a DELETE.
        """
        replaced = dml.replaced_on(on, target_alias or self.table_name,
                               source_alias or "__ducklake_source")
        return dml.replace_rows(self._target(), df, replaced, info, cache_source=True)

    def replace_using(self, df: DataFrame, keys: Iterable[str | Column],
                      info: CommitInfo | None = None, *, stream_id: str | None = None,
                      batch_id: int | None = None) -> Snapshot | None:
        """``INSERT INTO t REPLACE USING (keys)``: delete the rows whose key values occur in
        ``df``, then insert ``df``, in one snapshot. Keys are column names or expressions over
        the table's columns (``F.year("ts")``), compared NULL-safely, so replacing the
        partitions present in ``df`` is this with the partition key expressions."""
        info, earlier = self._batch(info, stream_id, batch_id)
        if earlier is not None:
            return earlier
        return dml.replace_rows(self._target(), df, dml.replaced_using(keys), info,
                                cache_source=True)

    def delete(self, where: str | Column | None = None,
               info: CommitInfo | None = None, alias: str | None = None) -> Snapshot | None:
        """DELETE the rows matching ``where`` (all rows when ``None``).

        Rows another writer inserts meanwhile are deleted too when they match: the commit
        lands on the newer snapshot (``Transaction.replanner``) instead of failing."""
        return dml.delete(self._target(), where, info, alias)

    def update(self, set: Mapping[str, str | Column], where: str | Column | None = None,
               info: CommitInfo | None = None, alias: str | None = None) -> Snapshot | None:
        """UPDATE ... SET col = expr WHERE ...; updated rows keep their row ids.

        Rows another writer inserts meanwhile are updated too when they match (see
        :meth:`delete`)."""
        return dml.update(self._target(), set, where, info, alias)

    def merge(self, source: DataFrame, on: str, clauses: Sequence[MergeClause],
              target_alias: str, source_alias: str,
              info: CommitInfo | None = None, *, stream_id: str | None = None,
              batch_id: int | None = None) -> MergeResult:
        """``MERGE INTO this AS target_alias USING source AS source_alias ON on`` with the
        ``WHEN`` clauses in order, in one snapshot (see :mod:`.merge`). A replayed stream
        batch (see :meth:`append`) merges nothing: the result has the snapshot that holds it
        and zero counts."""
        info, earlier = self._batch(info, stream_id, batch_id)
        if earlier is not None:
            return MergeResult(earlier, 0, 0, 0)
        return run_merge(self._target(), source, on, clauses, target_alias, source_alias,
                          info)
