"""Carry out one SQL statement: on Spark, or as a lake write that commits one snapshot.

Statements are parsed with Spark's own parser (never with regular expressions), so the SQL
accepted is exactly Spark SQL. Plans that write lake relations (CTAS, INSERT, DELETE, UPDATE,
CREATE VIEW, DROP, ALTER ... RENAME, schemas) are executed by the lake engine; the queries
inside them still run on Spark, over lake tables registered as temp views.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from typing import Any

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..lake.errors import (
    AlreadyExistsError,
    DuckLakeError,
    InvalidArgumentError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedViewError,
)
from ..lake.models import Snapshot
from ..lake.types import LakeType
from ..spark.lake import CommitInfo, LakeTable, PartitionBy, SparkLake
from ..spark.partitions import key_expression
from ..spark.types import column_specs, lake_type, spark_type
from .temp_views import LakeName, ViewBody, ViewRegistry, parse_name, quote
from .view_dialects import DUCKDB, SPARK, duckdb_query

log = logging.getLogger("dbt.adapters.ducklake")


@dataclass
class StatementResult:
    """What a statement did: a query's DataFrame, or a write's snapshot and row count."""

    kind: str
    df: DataFrame | None = None
    rows_affected: int = -1
    snapshot: Snapshot | None = None
    message: str = "OK"


class UnsupportedStatementError(DuckLakeError):
    """A statement that writes lake relations in a way the engine does not carry out yet."""


def _text(expr: Any, sql: str) -> str:
    """An expression's own text in the statement, from the positions Spark's parser recorded.

    Spark's ``Expression.sql()`` cannot always be parsed again (an IN subquery prints as
    ``listquery()``), so the original text is used whenever its span is known.
    """
    span = _span(expr)
    if span is not None:
        return sql[span[0]: span[1] + 1]
    return expr.sql()


def _span(expr: Any) -> tuple[int, int] | None:
    """The widest [start, stop] the parser recorded over an expression and its children: a
    node's own origin can be narrower than its text (``a BETWEEN 1 AND 2`` records only
    ``BETWEEN 1 AND 2`` on the AND it builds, and ``a`` on its child)."""
    origin = expr.origin()
    start, stop = origin.startIndex(), origin.stopIndex()
    best = (start.get(), stop.get()) if start.isDefined() and stop.isDefined() else None
    children = expr.children()
    for i in range(children.size()):
        child = _span(children.apply(i))
        if child is not None:
            best = child if best is None else (min(best[0], child[0]), max(best[1], child[1]))
    return best


def _seq(node: Any) -> list[Any]:
    """A Scala Seq as a Python list."""
    return [node.apply(i) for i in range(node.size())]


def _parts(node: Any) -> list[str]:
    """Name parts of an unresolved identifier, relation or namespace, or of a Scala Seq."""
    for method in ("nameParts", "multipartIdentifier"):
        try:
            node = getattr(node, method)()
            break
        except Exception:  # noqa: BLE001 - py4j: no such method on this node
            continue
    return [node.apply(i) for i in range(node.size())]


class Engine:
    """Executes statements for one SparkSession and one lake."""

    def __init__(self, spark: SparkSession, lake: SparkLake, registry: ViewRegistry,
                 commit_info: Callable[[str], CommitInfo] | None = None,
                 read_only: bool = False) -> None:
        self.spark = spark
        self.lake = lake
        self.registry = registry
        self.commit_info = commit_info or (lambda _kind: CommitInfo())
        self.read_only = read_only
        self._parser = spark._jsparkSession.sessionState().sqlParser()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ entry point
    def execute(self, sql: str) -> StatementResult:
        statements = split_statements(sql)
        result = StatementResult("EMPTY")
        for statement in statements:
            result = self._execute_one(statement)
        return result

    def _execute_one(self, sql: str) -> StatementResult:
        self.registry.refresh()
        alter = partition_alter(sql)
        if alter is not None:  # DuckDB's syntax, which Spark's parser rejects
            self.check_writable()
            return self.alter_partitioning(self._name(alter[0]), alter[1])
        plan, sql = self._parse(sql)
        kind = plan.getClass().getSimpleName()
        if kind == "CreateViewCommand" and self._plain_temp_view(plan):
            return self._create_temp_view(plan, sql)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            if kind in _COMMANDS:
                return StatementResult(kind, df=self.registry.run_with_views(self.spark.sql, sql))
            return StatementResult("SELECT", df=self.registry.query(self.spark.sql, sql))
        self.check_writable()
        return handler(plan, sql)

    @staticmethod
    def _plain_temp_view(plan: Any) -> bool:
        return (plan.viewType().toString() == "LocalTempView"
                and plan.userSpecifiedColumns().isEmpty() and plan.comment().isEmpty()
                and plan.properties().isEmpty())

    def _create_temp_view(self, plan: Any, sql: str) -> StatementResult:
        """``CREATE [OR REPLACE] TEMPORARY VIEW v AS query`` (how dbt stages an incremental
        model's new rows): the query is planned here, with file skipping, and the view holds
        that plan; a view over a plan reads what the lake held when it was created, like every
        lake relation of the session."""
        df = self.dataframe(sql, lambda p: p.plan())
        name = plan.name().quotedString()
        if plan.replace():
            df.createOrReplaceTempView(name)
        else:
            try:
                df.createTempView(name)
            except AnalysisException:
                if not plan.allowExisting():
                    raise
        return StatementResult("CreateViewCommand")

    def check_writable(self) -> None:
        """A connection pinned to a snapshot reads the past: it must not write."""
        if self.read_only:
            raise InvalidArgumentError(
                f"this connection is pinned to snapshot {self.registry.pinned_version} "
                "(snapshot_version or snapshot_time in the profile) and cannot write; remove "
                "the pin to write")

    def _parse(self, sql: str) -> tuple[Any, str]:
        """Parse with Spark's parser. A type name Spark lacks but PostgreSQL and DuckDB users
        write (``TEXT``, ``INT8``, ...) is replaced by Spark's name at the position the parser
        reports, and the statement is parsed again; the corrected text is returned with it."""
        for _ in range(256):
            try:
                return self._parser.parsePlan(sql), sql
            except Exception as exc:  # py4j raises pyspark's captured ParseException
                fixed = _with_spark_type_name(exc, sql)
                if fixed is None:
                    raise _parse_error(exc, sql) from None
                sql = fixed
        raise ParseException(f"too many unsupported type names in: {sql[:200]}")

    def dataframe(self, sql: str, part: Callable[[Any], Any]) -> DataFrame:
        """The query inside a statement as a DataFrame, registering the lake relations it reads.

        The statement is parsed afresh for every attempt: Spark's analyzer marks the nodes of
        a plan it failed to analyse, so a failed plan cannot be analysed again.
        """
        jvm = self.spark._jvm  # type: ignore[attr-defined]
        jss = self.spark._jsparkSession  # type: ignore[attr-defined]

        def build(text: str) -> DataFrame:
            jplan = part(self._parser.parsePlan(text))
            return DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(jss, jplan),
                             self.spark)

        return self.registry.query(build, sql)

    def _name(self, parts: list[str]) -> LakeName:
        name = parse_name(parts)
        if name is not None and not name.plain:
            raise InvalidArgumentError(
                f"{name.view_name} is a past snapshot or a change feed of a lake table: it "
                "can be read, not written")
        if name is None:
            raise InvalidArgumentError(
                f"{'.'.join(parts)} is not a lake relation name; write `schema.table` "
                "(one quoted identifier, as dbt renders it) or schema.table")
        return name

    def _changed(self, snapshot: Snapshot | None) -> Snapshot | None:
        """A statement changed the lake: the temp views registered for it may be stale."""
        self.registry.invalidate()
        return snapshot

    def _table(self, name: LakeName) -> LakeTable:
        return LakeTable(self.lake, name.schema, name.name)

    def _exists(self, name: LakeName) -> str | None:
        """``'table'``, ``'view'`` or ``None``."""
        lake = self.lake.lake
        for kind, relation in lake.relations(name.schema):
            if relation.lower() == name.name.lower():
                return kind
        return None

    # ------------------------------------------------------------------ tables
    def _on_CreateTableAsSelect(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.name()))
        existing = self._exists(name)
        if existing is not None:
            if plan.ignoreIfExists():
                return StatementResult("CREATE TABLE", message="exists")
            raise AlreadyExistsError(f"{name.schema}.{name.name} already exists in the lake")
        df = self.dataframe(sql, lambda p: p.query())
        return self._create(name, df, partition_by=_partitioning(plan))

    def _on_CreateTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        """CREATE TABLE t (columns): an empty lake table (NOT NULL columns kept)."""
        from pyspark.sql.types import StructType

        name = self._name(_parts(plan.name()))
        if self._exists(name) is not None:
            if plan.ignoreIfExists():
                return StatementResult("CREATE TABLE", message="exists")
            raise AlreadyExistsError(f"{name.schema}.{name.name} already exists in the lake")
        import json

        schema = StructType.fromJson(json.loads(plan.tableSchema().json()))
        self.lake.create_table((name.schema, name.name), schema,
                               info=self.commit_info("CREATE TABLE"),
                               partition_by=_partitioning(plan))
        self.registry.invalidate()
        return StatementResult("CREATE TABLE", snapshot=self.lake.current_snapshot())

    def _on_ReplaceTableAsSelect(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.name()))
        # A replaced table is defined afresh: without PARTITIONED BY it is unpartitioned.
        return self.replace_table(name, self.dataframe(sql, lambda p: p.query()),
                                  partition_by=_partitioning(plan) or [])

    def replace_table(self, name: LakeName, df: DataFrame,
                      not_null: list[str] | tuple[str, ...] = (),
                      partition_by: PartitionBy | None = None) -> StatementResult:
        """CREATE OR REPLACE TABLE: keep the table's identity; NOT NULL columns are checked
        against the new data before the one snapshot is committed.

        ``partition_by`` (e.g. ``["region", "year(ts)", "bucket(4, id)"]``) is the spec the
        new files are laid out by, set in the same snapshot; ``None`` keeps the table's spec
        (none for a new table) and ``[]`` makes the table unpartitioned."""
        self.check_writable()
        existing = self._exists(name)
        if existing == "view":
            self._changed(self.lake.drop_view((name.schema, name.name),
                                              info=self.commit_info("DROP VIEW")))
            existing = None
        if existing is None:
            return self._create(name, df, not_null, partition_by=partition_by)
        table = self._table(name)
        snapshot, recreated = table.replace(df, info=self.commit_info("CREATE OR REPLACE TABLE"),
                                            not_null=not_null, partition_by=partition_by)
        self.registry.invalidate()
        if recreated:
            recreated = (f"{name.schema}.{name.name} was recreated (new table id, history "
                         f"not carried over): {recreated} cannot be altered in place")
            log.warning(recreated)
        return StatementResult("CREATE OR REPLACE TABLE", snapshot=snapshot,
                               message=recreated or "replaced")

    def _create(self, name: LakeName, df: DataFrame,
                not_null: list[str] | tuple[str, ...] = (),
                partition_by: PartitionBy | None = None) -> StatementResult:
        """A new table from ``df`` in one snapshot, partitioned by ``partition_by`` if given."""
        self.lake.create_table((name.schema, name.name), df,
                               info=self.commit_info("CREATE TABLE"), not_null=not_null,
                               partition_by=partition_by or None)
        self.registry.invalidate()
        return StatementResult("CREATE TABLE", snapshot=self.lake.current_snapshot())

    def partitioning(self, name: LakeName) -> list[str]:
        """A table's partition spec as keys (``['region', 'year(ts)', 'bucket(4, id)']``),
        ``[]`` when unpartitioned. The same strings are accepted back as ``partition_by``."""
        return self._table(name).partitioning()

    def alter_partitioning(self, name: LakeName,
                           partition_by: PartitionBy | None) -> StatementResult:
        """``ALTER TABLE t SET PARTITIONED BY (...)`` (a spec) or ``RESET PARTITIONED BY``
        (``None``); only files written afterwards follow the new spec."""
        if self._exists(name) != "table":
            raise NotFoundError(f"{name.schema}.{name.name} is not a table in the lake")
        table = self._table(name)
        info = self.commit_info("ALTER TABLE")
        if partition_by is None:
            snapshot = table.reset_partitioning(info)
        else:
            snapshot = table.set_partitioning(partition_by, info)
        self.registry.invalidate()
        return StatementResult("ALTER TABLE", snapshot=snapshot,
                               message="OK" if snapshot else "unchanged")

    def _on_InsertIntoStatement(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.table()))
        if self._exists(name) != "table":
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
        table = self._table(name)
        columns = table.columns()
        df = self.dataframe(sql, lambda p: p.query())
        user_cols = _parts(plan.userSpecifiedCols())
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
            snapshot = self._replace(table, df, replace.get(), plan.query(), sql)
        elif plan.overwrite():
            snapshot = self._overwrite(table, df, plan, sql)
        else:
            snapshot = table.append(df, info=self.commit_info("INSERT"))
        self.registry.invalidate()
        return StatementResult("INSERT", snapshot=snapshot)

    def _replace(self, table: LakeTable, df: DataFrame, criteria: Any, query: Any,
                 sql: str) -> Snapshot | None:
        """INSERT INTO t REPLACE WHERE | USING (cols) | ON cond: one snapshot."""
        kind = criteria.getClass().getSimpleName().lower()
        info = self.commit_info("INSERT REPLACE")
        if "where" in kind:
            where = _text(criteria.productElement(0), sql)
            return self.registry.run_with_views(lambda: table.replace_where(df, where, info))
        if "using" in kind:
            keys = [str(k) for k in _seq(criteria.productElement(0))]
            known = {c.column_name.lower(): c.column_name for c in table.columns()}
            missing = [k for k in keys if k.lower() not in known]
            if missing:
                raise SchemaMismatchError(
                    f"REPLACE USING names unknown column(s) {', '.join(missing)}; "
                    f"{table.name} has " + ", ".join(known.values()))
            return table.replace_using(df, [F.col(quote(known[k.lower()])) for k in keys],
                                       info)
        on = _text(criteria.productElement(0), sql)
        alias = criteria.productElement(1)
        target_alias = str(alias.get()) if alias.isDefined() else table.table_name
        source_alias = (query.alias() if query.getClass().getSimpleName() == "SubqueryAlias"
                        else None)
        return self.registry.run_with_views(lambda: table.replace_on(
            df, on, target_alias, source_alias, info))

    def _overwrite(self, table: LakeTable, df: DataFrame, plan: Any,
                   sql: str) -> Snapshot | None:
        """INSERT OVERWRITE: the whole table, or on a partitioned table in dynamic mode
        (``spark.sql.sources.partitionOverwriteMode=dynamic``, as dbt's insert_overwrite sets)
        only the partitions present in the new rows."""
        info = self.commit_info("INSERT OVERWRITE")
        mode = (self.spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
                or "static").lower()
        keys = ([key_expression(k) for k in table.partition_keys()]
                if mode == "dynamic" else [])
        if keys:
            return table.replace_using(df, keys, info)
        snapshot, _ = table.replace(df, info=info, evolve=False)
        return snapshot

    def _target(self, relation: Any) -> tuple[LakeName, str | None]:
        alias = None
        if relation.getClass().getSimpleName() == "SubqueryAlias":
            alias = relation.alias()
            relation = relation.child()
        return self._name(_parts(relation)), alias

    def _on_DeleteFromTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name, alias = self._target(plan.table())
        condition = _text(plan.condition(), sql)
        table = self._table(name)
        where = None if condition.strip().lower() == "true" else condition
        snapshot = self.registry.run_with_views(
            lambda: table.delete(where, info=self.commit_info("DELETE"), alias=alias))
        self.registry.invalidate()
        return StatementResult("DELETE", snapshot=snapshot)

    def _on_UpdateTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name, alias = self._target(plan.table())
        assignments = plan.assignments()
        sets = {}
        for i in range(assignments.size()):
            a = assignments.apply(i)
            key = a.key().sql().strip("`")
            if alias and key.startswith(f"{alias}."):
                key = key[len(alias) + 1:]
            sets[key.strip("`")] = _text(a.value(), sql)
        condition = plan.condition()
        where = None if condition.isEmpty() else _text(condition.get(), sql)
        table = self._table(name)
        snapshot = self.registry.run_with_views(
            lambda: table.update(sets, where, info=self.commit_info("UPDATE"), alias=alias))
        self.registry.invalidate()
        return StatementResult("UPDATE", snapshot=snapshot)

    def _on_TruncateTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.table()))
        snapshot = self._table(name).delete(None, info=self.commit_info("TRUNCATE"))
        self.registry.invalidate()
        return StatementResult("TRUNCATE", snapshot=snapshot)

    def _on_MergeIntoTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        from ..spark.merge import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, MergeClause

        name, target_alias = self._target(plan.targetTable())
        source_plan = plan.sourceTable()
        source_alias = (source_plan.alias() if source_plan.getClass().getSimpleName()
                        == "SubqueryAlias" else "__ducklake_source")
        source = self.dataframe(sql, lambda p: p.sourceTable())
        kinds = {"UpdateAction": "update", "UpdateStarAction": "update_star",
                 "DeleteAction": "delete", "InsertAction": "insert",
                 "InsertStarAction": "insert_star"}
        clauses = []
        for when, actions in ((MATCHED, plan.matchedActions()),
                              (NOT_MATCHED, plan.notMatchedActions()),
                              (NOT_MATCHED_BY_SOURCE, plan.notMatchedBySourceActions())):
            for i in range(actions.size()):
                action = actions.apply(i)
                kind = kinds.get(action.getClass().getSimpleName())
                if kind is None:
                    raise UnsupportedStatementError(
                        f"MERGE action {action.getClass().getSimpleName()} is not supported; "
                        "accepted: UPDATE SET, UPDATE SET *, DELETE, INSERT, INSERT *")
                condition = action.condition()
                sets: tuple[tuple[str, str], ...] = ()
                if kind in ("update", "insert"):
                    pairs = action.assignments()
                    sets = tuple((pairs.apply(j).key().sql(), _text(pairs.apply(j).value(), sql))
                                 for j in range(pairs.size()))
                clauses.append(MergeClause(when, kind, _text(condition.get(), sql)
                                           if condition.isDefined() else None, sets))
        table = self._table(name)
        on = _text(plan.mergeCondition(), sql)
        result = self.registry.run_with_views(lambda: table.merge(
            source, on, clauses, target_alias or name.name, source_alias,
            info=self.commit_info("MERGE")))
        self.registry.invalidate()
        return StatementResult("MERGE", snapshot=result.snapshot,
                               rows_affected=result.updated + result.deleted + result.inserted)

    # ------------------------------------------------------------------ views
    def _on_CreateView(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.child()))
        text = plan.originalText()
        if text.isEmpty():
            raise InvalidArgumentError("CREATE VIEW without a query text")
        body = text.get()
        columns = [c._1() for c in _seq(plan.userSpecifiedColumns())]
        # Analyse now so that a broken view fails the statement, not a later reader.
        check = name.view_name + "__ducklake_check"
        self.registry.run_with_views(self.spark.sql, ViewBody(body, tuple(columns)).create(check))
        try:
            # (a temp view is analysed again when read: another thread's commit may have
            # dropped the relations it reads, which the registry then registers again)
            output_names = [] if columns else self.registry.run_with_views(
                lambda: self.spark.table(quote(check))).columns
        finally:
            self.spark.catalog.dropTempView(check)
        duckdb_sql = self._duckdb_view_query(name, body, output_names)
        existing = self._exists(name)
        if existing == "table" and not plan.replace():
            raise AlreadyExistsError(f"{name.schema}.{name.name} already exists as a table")
        if existing == "view" and not plan.replace():
            if plan.allowExisting():
                return StatementResult("CREATE VIEW", message="exists")
            raise AlreadyExistsError(f"view {name.schema}.{name.name} already exists")
        snapshot = self._changed(self.lake.create_view(
            (name.schema, name.name), body if duckdb_sql is None else duckdb_sql,
            dialect=SPARK if duckdb_sql is None else DUCKDB, column_aliases=columns,
            spark_sql=None if duckdb_sql is None else body, replace=True,
            info=self.commit_info("CREATE VIEW")))
        return StatementResult("CREATE VIEW", snapshot=snapshot)

    def _duckdb_view_query(self, name: LakeName, body: str,
                           output_names: list[str]) -> str | None:
        """The view's query as DuckDB SQL of the same meaning, or ``None`` (with a warning
        naming the construct) when it has none: then only this engine can run the view."""

        def spark_types(schema_name: str, table_name: str) -> dict[str, str] | None:
            name = quote(f"{schema_name}.{table_name}")
            try:  # the lake relations the view reads, as Spark types them
                fields = self.registry.run_with_views(lambda: self.spark.table(name)).schema.fields
            except (AnalysisException, DuckLakeError):
                return None
            return {f.name: f.dataType.simpleString() for f in fields}

        try:
            return duckdb_query(body, f"{name.schema}.{name.name}", spark_types, output_names)
        except UnsupportedViewError as exc:
            log.warning("%s: it is stored as Spark SQL only, which DuckDB lists but cannot "
                        "run", exc)
        except Exception:  # noqa: BLE001 - a translation's failure never fails the view
            log.warning("view %s.%s: its DuckDB translation failed; it is stored as Spark SQL "
                        "only, which DuckDB lists but cannot run", name.schema, name.name,
                        exc_info=True)
        return None

    # ------------------------------------------------------------------ drops and renames
    def _drop(self, parts: list[str], if_exists: bool, kind: str) -> StatementResult:
        name = self._name(parts)
        existing = self._exists(name)
        if existing is None:
            if if_exists:
                return StatementResult(kind, message="absent")
            raise NotFoundError(f"{name.schema}.{name.name} does not exist in the lake")
        drop = self.lake.drop_view if existing == "view" else self.lake.drop_table
        snapshot = self._changed(drop((name.schema, name.name), info=self.commit_info(kind)))
        return StatementResult(kind, snapshot=snapshot)

    def _on_DropTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name_parts = _parts(plan.child())
        if parse_name(name_parts) is None:  # a temp view of this session, not a lake table
            return StatementResult("DROP TABLE", df=self.spark.sql(sql))
        return self._drop(name_parts, plan.ifExists(), "DROP TABLE")

    def _on_DropView(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name_parts = _parts(plan.child())
        if parse_name(name_parts) is None:  # a plain temp view
            df = self.spark.sql(sql)
            return StatementResult("DROP VIEW", df=df)
        return self._drop(name_parts, plan.ifExists(), "DROP VIEW")

    def _on_RenameTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.child()))
        new = parse_name(_parts(plan.newName()), default_schema=name.schema)
        if new is None:
            raise InvalidArgumentError("ALTER ... RENAME TO needs a new name")
        rename = self.lake.rename_view if self._exists(name) == "view" else \
            self.lake.rename_table
        snapshot = self._changed(rename((name.schema, name.name), (new.schema, new.name),
                                        info=self.commit_info("RENAME")))
        return StatementResult("RENAME", snapshot=snapshot)

    def _on_AddColumns(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.table()))
        cols = plan.columnsToAdd()
        # CHAR(n)/VARCHAR(n) are strings in the lake, as everywhere else in Spark's reading.
        utils = self.spark._jvm.org.apache.spark.sql.catalyst.util.CharVarcharUtils  # type: ignore[attr-defined]
        schema = self.spark.createDataFrame([], ", ".join(
            f"{quote(cols.apply(i).colName())} "
            f"{utils.replaceCharVarcharWithString(cols.apply(i).dataType()).catalogString()}"
            for i in range(cols.size())))
        specs = column_specs(schema.schema)
        for i, spec in enumerate(specs):
            default = cols.apply(i).default()
            if default.isDefined():
                value = self._literal_default(spec, default.get().originalSQL())
                # Existing rows read the default (initial_default); new rows get it when an
                # INSERT leaves the column out (default_value), as in DuckDB.
                specs[i] = dc_replace(spec, initial_default=value, default_value=value)
        return self._alter(name, add=specs)

    def _literal_default(self, spec: Any, text: str) -> str | None:
        """A column DEFAULT as the literal text DuckLake stores. Only constants are taken: an
        expression such as ``now()`` would be frozen into the value it has today."""
        if text.strip().lower() == "null":
            return None
        try:
            df = self.spark.sql(f"SELECT CAST(({text}) AS STRING) AS v")
            alias = df._jdf.queryExecution().analyzed().expressions().apply(0)
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

    def _on_CommentOnTable(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        """COMMENT ON TABLE t IS '...' | NULL: DuckLake's ``comment`` tag (DuckDB shows it)."""
        name = self._name(_parts(plan.table()))
        comment = plan.comment() or None  # Spark's parser gives '' for IS NULL: no comment
        snapshot = self._changed(self.lake.set_comments((name.schema, name.name), comment,
                                                        info=self.commit_info("COMMENT")))
        return StatementResult("COMMENT", snapshot=snapshot)

    def _on_AlterColumns(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        """ALTER COLUMN: SET/DROP NOT NULL (checked against the data), TYPE, COMMENT."""
        name = self._name(_parts(plan.table()))
        table = self.lake.lake.table(name.schema, name.name)
        specs = plan.specs()
        current = {c.column_name.lower(): c.type for c in self.lake.lake.columns(table.table_id)}
        retype, nullability, comments = [], [], {}
        for i in range(specs.size()):
            spec = specs.apply(i)
            column = ".".join(_parts(spec.column().name()))
            if spec.newNullability().isDefined():
                allowed = bool(spec.newNullability().get())
                if not allowed:
                    self._check_not_null(name, column)
                nullability.append((column, allowed))
            if spec.newDataType().isDefined():
                data_type = spec.newDataType().get().catalogString()
                schema = self.spark.createDataFrame([], f"{quote(column)} {data_type}").schema
                new_type = lake_type(schema.fields[0].dataType, column)
                if current.get(column.lower()) != LakeType.parse(new_type):  # else: no change
                    retype.append((column, new_type))
            if spec.newComment().isDefined():
                comments[column] = spec.newComment().get()
        return self._alter(name, retype=retype, nullability=nullability, comments=comments)

    def _alter(self, name: LakeName, **changes: Any) -> StatementResult:
        """``ALTER TABLE``: one snapshot, none when nothing changes (a column given the type
        it has)."""
        snapshot = self._changed(self._table(name).alter_columns(
            **changes, info=self.commit_info("ALTER TABLE")))
        if snapshot is None:
            return StatementResult("ALTER TABLE", message="unchanged")
        return StatementResult("ALTER TABLE", snapshot=snapshot)

    def _check_not_null(self, name: LakeName, column: str) -> None:
        nulls = self.registry.run_with_views(lambda: self.spark.sql(
            f"SELECT count(*) FROM {quote(name.view_name)} WHERE {quote(column)} IS NULL"
        ).collect()[0][0])
        if nulls:
            raise SchemaMismatchError(
                f"cannot make column {column!r} of {name.schema}.{name.name} NOT NULL: "
                f"{nulls} row(s) hold NULL")

    def _on_DropColumns(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.table()))
        cols = plan.columnsToDrop()
        return self._alter(name, drop=[".".join(_parts(cols.apply(i).name()))
                                       for i in range(cols.size())])

    def _on_RenameColumn(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        name = self._name(_parts(plan.table()))
        old = ".".join(_parts(plan.column().name()))
        return self._alter(name, rename=[(old, plan.newName())])

    # ------------------------------------------------------------------ schemas
    def _on_CreateNamespace(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        parts = _parts(plan.name())
        if len(parts) != 1:
            raise InvalidArgumentError(f"schema name {'.'.join(parts)} must have one part")
        snapshot = self.lake.create_schema(parts[0], if_not_exists=plan.ifNotExists(),
                                           info=self.commit_info("CREATE SCHEMA"))
        return StatementResult("CREATE SCHEMA", snapshot=snapshot)

    def _on_DropNamespace(self, plan: Any, sql: str) -> StatementResult:  # noqa: N802
        parts = _parts(plan.namespace())
        snapshot = self.lake.drop_schema(parts[0], cascade=plan.cascade(),
                                         if_exists=plan.ifExists(),
                                         info=self.commit_info("DROP SCHEMA"))
        self.registry.invalidate()
        return StatementResult("DROP SCHEMA", snapshot=snapshot)


_COMMANDS = {"SetCommand", "ResetCommand", "CacheTable", "UncacheTable", "ShowTables",
             "ShowNamespaces", "DescribeRelation", "CreateTempViewUsing", "CreateViewCommand"}


def _partitioning(plan: Any) -> list[str] | None:
    """A CREATE plan's ``PARTITIONED BY`` keys in Spark's spelling (``years(ts)``,
    ``bucket(4, id)``, ``identity(region)``), or ``None`` when there are none."""
    parts = plan.partitioning()
    keys = [parts.apply(i).toString() for i in range(parts.size())]
    return keys or None


def partition_alter(sql: str) -> tuple[list[str], str | None] | None:
    """``(name parts, spec text | None)`` for DuckDB's ``ALTER TABLE t SET PARTITIONED BY
    (...)`` / ``ALTER TABLE t RESET PARTITIONED BY``; ``None`` for any other statement.

    Spark's parser rejects these statements, so they are recognised from sqlglot's tokens
    (quotes, comments and case handled by the tokenizer), never with a regular expression.
    """
    upper = sql.upper()
    if "ALTER" not in upper or "PARTITIONED" not in upper:  # cheap test before tokenizing
        return None
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    try:
        tokens = Spark().tokenize(sql)
    except Exception:  # noqa: BLE001 - let Spark's parser report the error
        return None
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    if len(tokens) < 5 or tokens[0].token_type != TokenType.ALTER or \
            tokens[1].token_type != TokenType.TABLE:
        return None
    i, parts = 2, []
    while i < len(tokens):
        token = tokens[i]
        if token.token_type in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING) and \
                token.text.upper() not in ("SET", "RESET"):
            parts.append(token.text)
            i += 1
            if i < len(tokens) and tokens[i].token_type == TokenType.DOT:
                i += 1
                continue
        break
    rest = tokens[i:]
    if not parts or len(rest) < 2 or rest[1].token_type != TokenType.PARTITION_BY:
        return None
    verb = rest[0].text.upper()
    if verb == "RESET" and len(rest) == 2:
        return parts, None
    if verb == "SET" and len(rest) >= 4 and rest[2].token_type == TokenType.L_PAREN and \
            rest[-1].token_type == TokenType.R_PAREN:
        return parts, sql[rest[2].end + 1:rest[-1].start]
    raise InvalidArgumentError(
        "expected ALTER TABLE <table> SET PARTITIONED BY (<keys>) or ALTER TABLE <table> "
        f"RESET PARTITIONED BY; got: {sql.strip()}")


def _column_default(column: Any) -> Any:
    """What an INSERT that leaves ``column`` out writes: its literal default, else NULL."""
    value = column.default_value
    if value is None or value.upper() == "NULL" or column.default_value_type not in (
            None, "literal") or column.type.nested:
        return F.lit(None).cast(spark_type(column))
    return F.lit(value).cast(spark_type(column))


# Type names of PostgreSQL and DuckDB that Spark's parser does not know, with Spark's own.
TYPE_ALIASES = {"TEXT": "STRING", "BPCHAR": "STRING", "INT2": "SMALLINT", "INT4": "INT",
                "INT8": "BIGINT", "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE", "BOOL": "BOOLEAN",
                "BYTEA": "BINARY", "BLOB": "BINARY"}


def _with_spark_type_name(exc: Exception, sql: str) -> str | None:
    """``sql`` with the unsupported type name Spark reported replaced, or None."""
    condition = getattr(exc, "getCondition", None)
    if condition is None or condition() != "UNSUPPORTED_DATATYPE":
        return None
    name = str(exc.getMessageParameters().get("typeName", "")).strip('"').upper()  # type: ignore[attr-defined]
    if name not in TYPE_ALIASES:
        return None
    for context in exc.getQueryContext():  # type: ignore[attr-defined]
        start, stop = context.startIndex(), context.stopIndex()
        if 0 <= start <= stop < len(sql) and sql[start:stop + 1].upper() == name:
            return sql[:start] + TYPE_ALIASES[name] + sql[stop + 1:]
    return None


def _parse_error(exc: Exception, sql: str) -> Exception:
    text = str(exc).strip()
    if "ParseException" in type(exc).__name__ or "PARSE_SYNTAX_ERROR" in text:
        return ParseException(text) if not isinstance(exc, ParseException) else exc
    return exc


def split_statements(sql: str) -> list[str]:
    """Split on top-level semicolons, respecting quotes and comments (sqlglot's tokenizer)."""
    if ";" not in sql:
        return [sql]
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    try:
        tokens = Spark().tokenize(sql)
    except Exception:  # noqa: BLE001 - let Spark's parser report the error
        return [sql]
    out, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            piece = sql[start:token.start]
            if piece.strip():
                out.append(piece)
            start = token.end + 1
    tail = sql[start:]
    if tail.strip() and any(t.start >= start for t in tokens):
        out.append(tail)
    return out or [sql]


__all__ = ["Engine", "StatementResult", "UnsupportedStatementError", "AnalysisException"]
