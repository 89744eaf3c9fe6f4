"""Statements that define lake relations: tables, views, their columns, partitioning, schemas.

Each handler takes the :class:`~.context.StatementContext`, the plan Spark's parser built and
the statement's text, and commits at most one lake snapshot. :data:`HANDLERS` maps the plan's
class name to its handler; the engine dispatches through it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace as dc_replace
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..lake.errors import (
    AlreadyExistsError,
    DuckLakeError,
    InvalidArgumentError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedViewError,
)
from ..lake.types import LakeType
from ..spark.constraints import enforce
from ..spark.expressions import java_class
from ..spark.lake import PartitionBy
from ..spark.types import column_specs, lake_type
from .context import Handler, StatementContext, StatementResult, UnsupportedStatementError
from .names import LakeName, parse_name, quote
from .plans import name_parts, seq
from .temp_views import ViewBody
from .view_dialects import DUCKDB, SPARK, duckdb_query

log = logging.getLogger("dbt.adapters.ducklake")


# ------------------------------------------------------------------ tables
def create_table_as_select(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.name()))
    existing = ctx.exists(name)
    if existing is not None:
        if plan.ignoreIfExists():
            return StatementResult("CREATE TABLE", message="exists")
        raise AlreadyExistsError(f"{name.schema}.{name.name} already exists in the lake")
    df = ctx.dataframe(sql, lambda p: p.query())
    return _create(ctx, name, df, partition_by=_partitioned_by(plan))


def create_table(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    """CREATE TABLE t (columns): an empty lake table (NOT NULL columns kept)."""
    name = ctx.written_name(name_parts(plan.name()))
    if ctx.exists(name) is not None:
        if plan.ignoreIfExists():
            return StatementResult("CREATE TABLE", message="exists")
        raise AlreadyExistsError(f"{name.schema}.{name.name} already exists in the lake")
    schema = StructType.fromJson(json.loads(plan.tableSchema().json()))
    ctx.lake.create_table((name.schema, name.name), schema,
                          info=ctx.commit_info("CREATE TABLE"),
                          partition_by=_partitioned_by(plan))
    ctx.registry.lake_changed()
    return StatementResult("CREATE TABLE", snapshot=ctx.lake.current_snapshot())


def replace_table_as_select(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.name()))
    # A replaced table is defined afresh: without PARTITIONED BY it is unpartitioned.
    return replace_table(ctx, name, ctx.dataframe(sql, lambda p: p.query()),
                         partition_by=_partitioned_by(plan) or [])


def replace_table(ctx: StatementContext, name: LakeName, df: DataFrame,
                  not_null: list[str] | tuple[str, ...] = (),
                  partition_by: PartitionBy | None = None) -> StatementResult:
    """CREATE OR REPLACE TABLE: keep the table's identity; NOT NULL columns are checked
    against the new data before the one snapshot is committed.

    ``partition_by`` (e.g. ``["region", "year(ts)", "bucket(4, id)"]``) is the spec the
    new files are laid out by, set in the same snapshot; ``None`` keeps the table's spec
    (none for a new table) and ``[]`` makes the table unpartitioned."""
    ctx.check_writable()
    existing = ctx.exists(name)
    if existing != "table":  # a view of that name is dropped in the table's snapshot
        return _create(ctx, name, df, not_null, partition_by=partition_by,
                       or_replace=existing == "view")
    table = ctx.table(name)
    snapshot, new_columns = table.replace(df, info=ctx.commit_info("CREATE OR REPLACE TABLE"),
                                          not_null=not_null, partition_by=partition_by)
    ctx.registry.lake_changed()
    message = None
    if new_columns:
        message = (f"{name.schema}.{name.name}: {new_columns} cannot be altered in place, so "
                   "it is a new column of that name (new column id; time travel before this "
                   "snapshot shows the old one)")
        log.warning(message)
    return StatementResult("CREATE OR REPLACE TABLE", snapshot=snapshot,
                           message=message or "replaced")


def _create(ctx: StatementContext, name: LakeName, df: DataFrame,
            not_null: list[str] | tuple[str, ...] = (),
            partition_by: PartitionBy | None = None, or_replace: bool = False
            ) -> StatementResult:
    """A new table from ``df`` in one snapshot, partitioned by ``partition_by`` if given;
    ``or_replace`` drops the view of that name in the same snapshot."""
    enforce(ctx.constraints_of(name), df, f"{name.schema}.{name.name}")
    ctx.lake.create_table((name.schema, name.name), df, or_replace=or_replace,
                          info=ctx.commit_info("CREATE TABLE"), not_null=not_null,
                          partition_by=partition_by or None,
                          table_options=ctx.table_options_of(name),
                          sorted_by=ctx.sorted_by_of(name))
    ctx.registry.lake_changed()
    return StatementResult("CREATE TABLE", snapshot=ctx.lake.current_snapshot())


def _partitioned_by(plan: Any) -> list[str] | None:
    """A CREATE plan's ``PARTITIONED BY`` keys in Spark's spelling (``years(ts)``,
    ``bucket(4, id)``, ``identity(region)``), or ``None`` when there are none."""
    parts = plan.partitioning()
    keys = [parts.apply(i).toString() for i in range(parts.size())]
    return keys or None


# ------------------------------------------------------------------ partitioning
def partitioning(ctx: StatementContext, name: LakeName) -> list[str]:
    """A table's partition spec as keys (``['region', 'year(ts)', 'bucket(4, id)']``),
    ``[]`` when unpartitioned. The same strings are accepted back as ``partition_by``."""
    return ctx.table(name).partitioning()


def alter_partitioning(ctx: StatementContext, name: LakeName,
                       partition_by: PartitionBy | None) -> StatementResult:
    """``ALTER TABLE t SET PARTITIONED BY (...)`` (a spec) or ``RESET PARTITIONED BY``
    (``None``); only files written afterwards follow the new spec."""
    if ctx.exists(name) != "table":
        raise NotFoundError(f"{name.schema}.{name.name} is not a table in the lake")
    table = ctx.table(name)
    info = ctx.commit_info("ALTER TABLE")
    if partition_by is None:
        snapshot = table.reset_partitioning(info)
    else:
        snapshot = table.set_partitioning(partition_by, info)
    ctx.registry.lake_changed()
    return StatementResult("ALTER TABLE", snapshot=snapshot,
                           message="OK" if snapshot else "unchanged")


# ------------------------------------------------------------------ views
def create_view(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.child()))
    text = plan.originalText()
    if text.isEmpty():
        raise InvalidArgumentError("CREATE VIEW without a query text")
    body = text.get()
    columns = [c._1() for c in seq(plan.userSpecifiedColumns())]
    # Analyse now so that a broken view fails the statement, not a later reader.
    check = name.view_name + "__ducklake_check"
    # (refused, naming the construct, if it is more than a query over lake relations)
    ctx.registry.create_view(f"{name.schema}.{name.name}",
                             ViewBody(body, tuple(columns)).create(check))
    try:
        # (a temp view is analysed again when read: another thread's commit may have
        # dropped the relations it reads, which the registry then registers again)
        output_names = [] if columns else ctx.registry.run_with_views(
            lambda: ctx.spark.table(quote(check))).columns
    finally:
        ctx.spark.catalog.dropTempView(check)
    duckdb_sql = _duckdb_view_query(ctx, name, body, output_names)
    existing = ctx.exists(name)
    if existing == "table" and not plan.replace():
        raise AlreadyExistsError(f"{name.schema}.{name.name} already exists as a table")
    if existing == "view" and not plan.replace():
        if plan.allowExisting():
            return StatementResult("CREATE VIEW", message="exists")
        raise AlreadyExistsError(f"view {name.schema}.{name.name} already exists")
    snapshot = ctx.changed(ctx.lake.create_view(
        (name.schema, name.name), body if duckdb_sql is None else duckdb_sql,
        dialect=SPARK if duckdb_sql is None else DUCKDB, column_aliases=columns,
        spark_sql=None if duckdb_sql is None else body, replace=True,
        info=ctx.commit_info("CREATE VIEW")))
    return StatementResult("CREATE VIEW", snapshot=snapshot)


def _duckdb_view_query(ctx: StatementContext, name: LakeName, body: str,
                       output_names: list[str]) -> str | None:
    """The view's query as DuckDB SQL of the same meaning, or ``None`` (with a warning
    naming the construct) when it has none: then only this engine can run the view."""

    def spark_types(schema_name: str, table_name: str) -> dict[str, str] | None:
        name = quote(f"{schema_name}.{table_name}")
        try:  # the lake relations the view reads, as Spark types them
            fields = ctx.registry.run_with_views(lambda: ctx.spark.table(name)).schema.fields
        except (AnalysisException, DuckLakeError):
            return None
        return {f.name: f.dataType.simpleString() for f in fields}

    try:
        return duckdb_query(body, f"{name.schema}.{name.name}", spark_types, output_names)
    except UnsupportedViewError as exc:
        log.warning("%s: it is stored as Spark SQL only, which DuckDB lists but cannot "
                    "run", exc)
    except Exception:  # a translation's failure never fails the view
        log.warning("view %s.%s: its DuckDB translation failed; it is stored as Spark SQL "
                    "only, which DuckDB lists but cannot run", name.schema, name.name,
                    exc_info=True)
    return None


# ------------------------------------------------------------------ drops and renames
def _drop(ctx: StatementContext, parts: list[str], if_exists: bool,
          kind: str) -> StatementResult:
    name = ctx.written_name(parts)
    existing = ctx.exists(name)
    if existing is None:
        if if_exists:
            return StatementResult(kind, message="absent")
        raise NotFoundError(f"{name.schema}.{name.name} does not exist in the lake")
    drop = ctx.lake.drop_view if existing == "view" else ctx.lake.drop_table
    snapshot = ctx.changed(drop((name.schema, name.name), info=ctx.commit_info(kind)))
    return StatementResult(kind, snapshot=snapshot)


def drop_table(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    parts = name_parts(plan.child())
    if parse_name(parts) is None:  # a temp view of this session, not a lake table
        return StatementResult("DROP TABLE", df=ctx.spark.sql(sql))
    return _drop(ctx, parts, plan.ifExists(), "DROP TABLE")


def drop_view(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    parts = name_parts(plan.child())
    if parse_name(parts) is None:  # a plain temp view
        df = ctx.spark.sql(sql)
        return StatementResult("DROP VIEW", df=df)
    return _drop(ctx, parts, plan.ifExists(), "DROP VIEW")


def rename_table(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.child()))
    new = parse_name(name_parts(plan.newName()), default_schema=name.schema)
    if new is None:
        raise InvalidArgumentError("ALTER ... RENAME TO needs a new name")
    rename = ctx.lake.rename_view if ctx.exists(name) == "view" else ctx.lake.rename_table
    snapshot = ctx.changed(rename((name.schema, name.name), (new.schema, new.name),
                                  info=ctx.commit_info("RENAME")))
    return StatementResult("RENAME", snapshot=snapshot)


# ------------------------------------------------------------------ columns
def add_columns(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.table()))
    cols = plan.columnsToAdd()
    # CHAR(n)/VARCHAR(n) are strings in the lake, as everywhere else in Spark's reading.
    utils = java_class(ctx.spark, "org.apache.spark.sql.catalyst.util.CharVarcharUtils")
    schema = ctx.spark.createDataFrame([], ", ".join(
        f"{quote(cols.apply(i).colName())} "
        f"{utils.replaceCharVarcharWithString(cols.apply(i).dataType()).catalogString()}"
        for i in range(cols.size())))
    specs = column_specs(schema.schema)
    for i, spec in enumerate(specs):
        default = cols.apply(i).default()
        if default.isDefined():
            value = _literal_default(ctx, spec, default.get().originalSQL())
            # Existing rows read the default (initial_default); new rows get it when an
            # INSERT leaves the column out (default_value), as in DuckDB.
            specs[i] = dc_replace(spec, initial_default=value, default_value=value)
    return _alter(ctx, name, add=specs)


def _literal_default(ctx: StatementContext, spec: Any, text: str) -> str | None:
    """A column DEFAULT as the literal text DuckLake stores. Only constants are taken: an
    expression such as ``now()`` would be frozen into the value it has today."""
    if text.strip().lower() == "null":
        return None
    try:
        df = ctx.spark.sql(f"SELECT CAST(({text}) AS STRING) AS v")
        alias = df._jdf.queryExecution().analyzed().expressions().apply(0)  # noqa: SLF001
        value_expr = alias.children().apply(0)  # under the alias ``v``
        leaves = value_expr.collectLeaves()
        constant = value_expr.foldable() and all(
            leaves.apply(i).getClass().getSimpleName() == "Literal"
            for i in range(leaves.size()))  # now() is foldable, but not a constant
    except Exception as exc:  # noqa: BLE001 - report the default, not Spark's internals
        raise UnsupportedStatementError(
            f"DEFAULT {text} for column {spec.name} is not a valid constant: "
            f"{str(exc).splitlines()[0]}") from None
    if not constant:
        raise UnsupportedStatementError(
            f"DEFAULT {text} for column {spec.name} must be a constant (a literal such as "
            "5 or 'x'); expression defaults are not supported")
    value = df.collect()[0]["v"]
    return None if value is None else str(value)


def comment_on_table(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    """COMMENT ON TABLE t IS '...' | NULL: DuckLake's ``comment`` tag (DuckDB shows it)."""
    name = ctx.written_name(name_parts(plan.table()))
    comment = plan.comment() or None  # Spark's parser gives '' for IS NULL: no comment
    snapshot = ctx.changed(ctx.lake.set_comments((name.schema, name.name), comment,
                                                 info=ctx.commit_info("COMMENT")))
    return StatementResult("COMMENT", snapshot=snapshot)


def alter_columns(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    """ALTER COLUMN: SET/DROP NOT NULL (checked against the data), TYPE, COMMENT."""
    name = ctx.written_name(name_parts(plan.table()))
    table = ctx.lake.catalog.table(name.schema, name.name)
    specs = plan.specs()
    current = {c.column_name.lower(): c.type for c in ctx.lake.catalog.columns(table.table_id)}
    retype, nullability, comments = [], [], {}
    for i in range(specs.size()):
        spec = specs.apply(i)
        column = ".".join(name_parts(spec.column().name()))
        if spec.newNullability().isDefined():
            allowed = bool(spec.newNullability().get())
            if not allowed:
                _check_not_null(ctx, name, column)
            nullability.append((column, allowed))
        if spec.newDataType().isDefined():
            data_type = spec.newDataType().get().catalogString()
            schema = ctx.spark.createDataFrame([], f"{quote(column)} {data_type}").schema
            new_type = lake_type(schema.fields[0].dataType, column)
            if current.get(column.lower()) != LakeType.parse(new_type):  # else: no change
                retype.append((column, new_type))
        if spec.newComment().isDefined():
            comments[column] = spec.newComment().get()
    return _alter(ctx, name, retype=retype, nullability=nullability, comments=comments)


def _alter(ctx: StatementContext, name: LakeName, **changes: Any) -> StatementResult:
    """``ALTER TABLE``: one snapshot, none when nothing changes (a column given the type
    it has)."""
    snapshot = ctx.changed(ctx.table(name).alter_columns(
        **changes, info=ctx.commit_info("ALTER TABLE")))
    if snapshot is None:
        return StatementResult("ALTER TABLE", message="unchanged")
    return StatementResult("ALTER TABLE", snapshot=snapshot)


def _check_not_null(ctx: StatementContext, name: LakeName, column: str) -> None:
    nulls = ctx.registry.run_with_views(lambda: ctx.spark.sql(
        f"SELECT count(*) FROM {quote(name.view_name)} WHERE {quote(column)} IS NULL"
    ).collect()[0][0])
    if nulls:
        raise SchemaMismatchError(
            f"cannot make column {column!r} of {name.schema}.{name.name} NOT NULL: "
            f"{nulls} row(s) hold NULL")


def drop_columns(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.table()))
    cols = plan.columnsToDrop()
    return _alter(ctx, name, drop=[".".join(name_parts(cols.apply(i).name()))
                                   for i in range(cols.size())])


def rename_column(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.table()))
    old = ".".join(name_parts(plan.column().name()))
    return _alter(ctx, name, rename=[(old, plan.newName())])


# ------------------------------------------------------------------ schemas
def create_namespace(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    parts = name_parts(plan.name())
    if len(parts) != 1:
        raise InvalidArgumentError(f"schema name {'.'.join(parts)} must have one part")
    snapshot = ctx.lake.create_schema(parts[0], if_not_exists=plan.ifNotExists(),
                                      info=ctx.commit_info("CREATE SCHEMA"))
    return StatementResult("CREATE SCHEMA", snapshot=snapshot)


def drop_namespace(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    parts = name_parts(plan.namespace())
    snapshot = ctx.lake.drop_schema(parts[0], cascade=plan.cascade(),
                                    if_exists=plan.ifExists(),
                                    info=ctx.commit_info("DROP SCHEMA"))
    ctx.registry.lake_changed()
    return StatementResult("DROP SCHEMA", snapshot=snapshot)


HANDLERS: dict[str, Handler] = {
    "CreateTableAsSelect": create_table_as_select,
    "CreateTable": create_table,
    "ReplaceTableAsSelect": replace_table_as_select,
    "CreateView": create_view,
    "DropTable": drop_table,
    "DropView": drop_view,
    "RenameTable": rename_table,
    "AddColumns": add_columns,
    "CommentOnTable": comment_on_table,
    "AlterColumns": alter_columns,
    "DropColumns": drop_columns,
    "RenameColumn": rename_column,
    "CreateNamespace": create_namespace,
    "DropNamespace": drop_namespace,
}
"""Spark's logical plan class name -> the handler that carries the statement out."""
