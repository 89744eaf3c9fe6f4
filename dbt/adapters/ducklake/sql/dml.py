"""Statements that change a lake table's rows: INSERT (append, REPLACE, OVERWRITE), DELETE,
UPDATE, TRUNCATE and MERGE.

Each handler takes the :class:`~.context.StatementContext`, the plan Spark's parser built and
the statement's text, and commits one lake snapshot (none when nothing changes). Conditions
and values are handed to ``spark/`` as the text the user wrote (:func:`.plans.source_text`),
to run on Spark over the lake relations registered as temp views. :data:`HANDLERS` maps the
plan's class name to its handler; the engine dispatches through it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..lake.errors import NotFoundError, SchemaMismatchError
from ..lake.models import Snapshot
from ..spark.expressions import split_identifier
from ..spark.lake import LakeTable
from ..spark.merge import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, MergeClause
from ..spark.partitions import key_expression
from ..spark.types import spark_type
from .context import Handler, StatementContext, StatementResult, UnsupportedStatementError
from .names import LakeName, parse_name, quote
from .plans import name_parts, seq, source_text


# ------------------------------------------------------------------ insert
def insert_into(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.table()))
    if ctx.exists(name) != "table":
        raise NotFoundError(f"cannot insert into {name.schema}.{name.name}: no such table "
                            "in the lake")
    if not plan.partitionSpec().isEmpty():
        # Hive-style PARTITION (...) clauses name Hive partitions, which a DuckLake table
        # does not have; its partitions follow from the rows' values.
        raise UnsupportedStatementError(
            f"INSERT ... PARTITION (...) is not supported on {name.schema}.{name.name}: "
            "DuckLake derives partitions from the rows. Use INSERT INTO t REPLACE WHERE "
            "<predicate> SELECT ..., or INSERT OVERWRITE with "
            "spark.sql.sources.partitionOverwriteMode=dynamic, without the clause")
    table = ctx.table(name)
    columns = table.columns()
    df = ctx.dataframe(sql, lambda p: p.query())
    user_cols = name_parts(plan.userSpecifiedCols())
    if plan.byName():
        # BY NAME, as Spark: a table column the query does not give gets its default.
        given = {c.lower() for c in df.columns}
        df = df.select("*", *[_column_default(c).alias(c.column_name) for c in columns
                              if c.column_name.lower() not in given])
    elif user_cols:
        if len(user_cols) != len(df.columns):
            raise SchemaMismatchError(
                f"INSERT lists {len(user_cols)} columns but the query returns "
                f"{len(df.columns)}")
        df = df.toDF(*user_cols)
        given = {c.lower() for c in user_cols}
        df = df.select("*", *[_column_default(c).alias(c.column_name) for c in columns
                              if c.column_name.lower() not in given])
    else:
        if len(df.columns) != len(columns):
            raise SchemaMismatchError(
                f"INSERT INTO {name.schema}.{name.name} gives {len(df.columns)} columns but "
                f"the table has {len(columns)}: "
                + ", ".join(c.column_name for c in columns))
        df = df.toDF(*[c.column_name for c in columns])
    # SQL INSERT casts to the column types, as Spark's store assignment does (ANSI:
    # a value that does not fit fails the statement).
    types = {c.column_name.lower(): spark_type(c) for c in columns}
    df = df.select(*[F.col(quote(n)).cast(types[n.lower()]).alias(n) if n.lower() in types
                     else F.col(quote(n)) for n in df.columns])
    replace = plan.replaceCriteriaOpt()
    if replace.isDefined():
        snapshot = _replace(ctx, table, df, replace.get(), plan.query(), sql)
    elif plan.overwrite():
        snapshot = _overwrite(ctx, table, df)
    else:
        snapshot = table.append(df, info=ctx.commit_info("INSERT"))
    ctx.registry.lake_changed()
    return StatementResult("INSERT", snapshot=snapshot)


def _column_default(column: Any) -> Any:
    """What an INSERT that leaves ``column`` out writes: its literal default, else NULL."""
    value = column.default_value
    if value is None or value.upper() == "NULL" or column.default_value_type not in (
            None, "literal") or column.type.nested:
        return F.lit(None).cast(spark_type(column))
    return F.lit(value).cast(spark_type(column))


def _replace(ctx: StatementContext, table: LakeTable, df: DataFrame, criteria: Any,
             query: Any, sql: str) -> Snapshot | None:
    """INSERT INTO t REPLACE WHERE | USING (cols) | ON cond: one snapshot."""
    kind = criteria.getClass().getSimpleName().lower()
    info = ctx.commit_info("INSERT REPLACE")
    if "where" in kind:
        where = source_text(criteria.productElement(0), sql)
        return ctx.registry.run_with_views(lambda: table.replace_where(df, where, info))
    if "using" in kind:
        keys = [str(k) for k in seq(criteria.productElement(0))]
        known = {c.column_name.lower(): c.column_name for c in table.columns()}
        missing = [k for k in keys if k.lower() not in known]
        if missing:
            raise SchemaMismatchError(
                f"REPLACE USING names unknown column(s) {', '.join(missing)}; "
                f"{table.name} has " + ", ".join(known.values()))
        return table.replace_using(df, [F.col(quote(known[k.lower()])) for k in keys], info)
    on = source_text(criteria.productElement(0), sql)
    alias = criteria.productElement(1)
    target_alias = str(alias.get()) if alias.isDefined() else table.table_name
    source_alias = (query.alias() if query.getClass().getSimpleName() == "SubqueryAlias"
                    else None)
    return ctx.registry.run_with_views(lambda: table.replace_on(
        df, on, target_alias, source_alias, info))


def _overwrite(ctx: StatementContext, table: LakeTable, df: DataFrame) -> Snapshot | None:
    """INSERT OVERWRITE: the whole table, or on a partitioned table in dynamic mode
    (``spark.sql.sources.partitionOverwriteMode=dynamic``, as dbt's insert_overwrite sets)
    only the partitions present in the new rows."""
    info = ctx.commit_info("INSERT OVERWRITE")
    mode = (ctx.spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
            or "static").lower()
    keys = [key_expression(k) for k in table.partition_keys()] if mode == "dynamic" else []
    if keys:
        return table.replace_using(df, keys, info)
    snapshot, _ = table.replace(df, info=info, evolve=False)
    return snapshot


# ------------------------------------------------------------------ delete, update, truncate
def _target(ctx: StatementContext, relation: Any) -> tuple[LakeName, str]:
    """The table a DELETE, UPDATE or MERGE writes, and the name its columns are qualified by:
    the statement's alias for it, else the table's name (``c.v`` in ``UPDATE s.c SET ...``,
    as Spark and DuckDB allow)."""
    alias = None
    if relation.getClass().getSimpleName() == "SubqueryAlias":
        alias = relation.alias()
        relation = relation.child()
    name = ctx.written_name(name_parts(relation))
    return name, alias or name.name


def delete_from(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name, alias = _target(ctx, plan.table())
    condition = source_text(plan.condition(), sql)
    table = ctx.table(name)
    where = None if condition.strip().lower() == "true" else \
        ctx.registry.prepared_condition(condition)
    snapshot = ctx.registry.run_with_views(
        lambda: table.delete(where, info=ctx.commit_info("DELETE"), alias=alias))
    ctx.registry.lake_changed()
    return StatementResult("DELETE", snapshot=snapshot)


def update(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name, alias = _target(ctx, plan.table())
    assignments = plan.assignments()
    sets = {}
    for i in range(assignments.size()):
        a = assignments.apply(i)
        key = split_identifier(a.key().sql())  # `a``b` is the column a`b
        if alias and len(key) == 2 and key[0].lower() == alias.lower():
            key = key[1:]
        sets[".".join(key)] = ctx.registry.prepared_condition(source_text(a.value(), sql))
    condition = plan.condition()
    where = None if condition.isEmpty() else \
        ctx.registry.prepared_condition(source_text(condition.get(), sql))
    table = ctx.table(name)
    snapshot = ctx.registry.run_with_views(
        lambda: table.update(sets, where, info=ctx.commit_info("UPDATE"), alias=alias))
    ctx.registry.lake_changed()
    return StatementResult("UPDATE", snapshot=snapshot)


def truncate(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name = ctx.written_name(name_parts(plan.table()))
    snapshot = ctx.table(name).delete(None, info=ctx.commit_info("TRUNCATE"))
    ctx.registry.lake_changed()
    return StatementResult("TRUNCATE", snapshot=snapshot)


# ------------------------------------------------------------------ merge
_MERGE_ACTIONS = {"UpdateAction": "update", "UpdateStarAction": "update_star",
                  "DeleteAction": "delete", "InsertAction": "insert",
                  "InsertStarAction": "insert_star"}


def _source_alias(source: Any) -> str:
    """The name a MERGE's ON condition and clauses qualify source columns by: the source's
    alias, else, for a relation, its name as Spark would qualify it (``u`` for ``USING
    s.u`` or dbt's `` `s.u` ``)."""
    kind = source.getClass().getSimpleName()
    if kind == "SubqueryAlias":
        return str(source.alias())
    if kind == "UnresolvedRelation":
        parts = name_parts(source)
        name = parse_name(parts)
        return name.name if name is not None and name.schema else parts[-1]
    return "__ducklake_source"


def merge_into(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    name, target_alias = _target(ctx, plan.targetTable())
    source_plan = plan.sourceTable()
    source_alias = _source_alias(source_plan)
    source = ctx.dataframe(sql, lambda p: p.sourceTable())
    clauses = []
    for when, actions in ((MATCHED, plan.matchedActions()),
                          (NOT_MATCHED, plan.notMatchedActions()),
                          (NOT_MATCHED_BY_SOURCE, plan.notMatchedBySourceActions())):
        for i in range(actions.size()):
            action = actions.apply(i)
            kind = _MERGE_ACTIONS.get(action.getClass().getSimpleName())
            if kind is None:
                raise UnsupportedStatementError(
                    f"MERGE action {action.getClass().getSimpleName()} is not supported; "
                    "accepted: UPDATE SET, UPDATE SET *, DELETE, INSERT, INSERT *")
            condition = action.condition()
            sets: tuple[tuple[str, str], ...] = ()
            if kind in ("update", "insert"):
                pairs = action.assignments()
                sets = tuple((pairs.apply(j).key().sql(),
                              source_text(pairs.apply(j).value(), sql))
                             for j in range(pairs.size()))
            clauses.append(MergeClause(when, kind, source_text(condition.get(), sql)
                                       if condition.isDefined() else None, sets))
    table = ctx.table(name)
    on = source_text(plan.mergeCondition(), sql)
    result = ctx.registry.run_with_views(lambda: table.merge(
        source, on, clauses, target_alias, source_alias,
        info=ctx.commit_info("MERGE")))
    ctx.registry.lake_changed()
    return StatementResult("MERGE", snapshot=result.snapshot,
                           rows_affected=result.updated + result.deleted + result.inserted)


HANDLERS: dict[str, Handler] = {
    "InsertIntoStatement": insert_into,
    "DeleteFromTable": delete_from,
    "UpdateTable": update,
    "TruncateTable": truncate,
    "MergeIntoTable": merge_into,
}
"""Spark's logical plan class name -> the handler that carries the statement out."""
