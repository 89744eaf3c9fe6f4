"""Lake tables and views as Spark temp views, registered on demand and refreshed when stale.

A relation renders as one quoted identifier, `` `schema.table` `` (time travel and the change
feed add a suffix: `` `schema.table@v42` ``, `` `schema.table@changes:3..7` ``, see
:class:`.names.LakeName`). When Spark reports such a name as missing, the registry creates the
temp view from the lake at the current (or pinned) snapshot and the statement is retried.
Registered views are dropped again as soon as the lake moves to a new snapshot.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..lake.errors import NotFoundError, UnsafeViewError, UnsupportedViewError
from ..lake.models import DataFile
from ..lake.snapshot_changes import changes_map, tables_touched
from ..spark import skipping
from ..spark.changes import ChangeSources, load_sources
from ..spark.changes import changes as feed_changes
from ..spark.changes import deletions as feed_deletions
from ..spark.changes import insertions as feed_insertions
from ..spark.expressions import java_class
from ..spark.lake import SparkLake
from ..spark.read import local_frame, scan
from ..spark.table_state import TableState, load_state
from .names import (
    CURRENT_SNAPSHOT,
    SNAPSHOTS,
    LakeName,
    missing_relation,
    missing_routine,
    parse_name,
    quote,
)
from .parsed_tree import parsed_tree
from .plans import Named, qualified_columns, relation_names
from .view_dialects import SPARK, duckdb_type, spark_query
from .view_guard import check_function, check_view

log = logging.getLogger("dbt.adapters.ducklake")

# PySpark logs every analysis error it raises; a missing lake relation is expected here and is
# registered and retried, so that log line would only mislead.
logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)

MAX_REGISTRATIONS_PER_STATEMENT = 200
FEED_BUILDERS = {"changes": feed_changes, "insertions": feed_insertions,
                 "deletions": feed_deletions}


@dataclass(frozen=True)
class Reference:
    """A reference in a statement's text to a registered lake view, by the parser's
    positions (``text[start:stop]`` is the quoted view name), and whether it has an alias."""

    start: int
    stop: int
    view: str
    aliased: bool


@dataclass(frozen=True)
class ViewBody:
    """A DuckLake view registered as a temp view: its query as registered (Spark SQL) and
    its column names if it was created with a column list."""

    sql: str
    aliases: tuple[str, ...] = ()

    def create(self, name: str, sql: str | None = None) -> str:
        """The statement registering the view (or ``sql`` in its place) as temp view ``name``."""
        columns = f" ({', '.join(quote(a) for a in self.aliases)})" if self.aliases else ""
        query = self.sql if sql is None else sql
        return f"CREATE OR REPLACE TEMP VIEW {quote(name)}{columns} AS {query}"


class ViewRegistry:
    """Which lake relations are registered as temp views in a SparkSession, and as of when.

    ``pinned_version`` (the profile's ``snapshot_version`` or ``snapshot_time``) makes every
    plain name, and the open end of a change feed, resolve at that snapshot.
    """

    def __init__(self, spark: SparkSession, lake: SparkLake,
                 pinned_version: int | None = None,
                 function_schema: str | None = None) -> None:
        self.spark = spark
        self.lake = lake
        self.pinned_version = pinned_version
        # the schema an unqualified call of a lake function looks in (the profile's schema,
        # as Spark looks in the current database)
        self.function_schema = function_schema
        self._functions: dict[str, bool] = {}  # temp function name -> follows the latest
        self._registered: dict[str, bool] = {}  # view name -> follows the latest snapshot
        # view name -> the table state it scans, the change feed's kind and sources, or the
        # body of a DuckLake view
        self._states: dict[str, TableState | tuple[str, ChangeSources] | ViewBody] = {}
        self._parser = spark._jsparkSession.sessionState().sqlParser()  # noqa: SLF001
        self._kept_views = itertools.count(1)
        self._snapshot: int | None = None  # the latest snapshot when the views were checked
        self._looks = 0  # how often they were checked against a newer snapshot
        self._lock = threading.RLock()

    def refresh(self) -> None:
        """Drop the registered views the lake's commits since they were registered may have
        made stale (:meth:`lake_changed`)."""
        if self.pinned_version is not None:
            return
        self.lake_changed()

    def lake_changed(self) -> None:
        """The lake may have moved (a commit here or by another writer): drop the floating
        views that no longer show the latest snapshot.

        A view of a plain table whose table no snapshot since has touched reads exactly what
        the latest snapshot holds (the same name, live files, deletes and columns) and is kept:
        registering it again costs a Hadoop file listing and a score of py4j calls, and
        dropping every view at every commit made each data test of a ``dbt build`` register
        its table anew while other threads' models committed. What a snapshot touched is
        read from the catalog's change tokens (:func:`.snapshot_changes.tables_touched`);
        tokens that do not name tables (a dropped schema, a view's change), a gap in the
        snapshot ids or an empty change list drop every floating view, as do lake views,
        change feeds, the snapshot list and views as of a time, whatever the change."""
        catalog = self.lake.catalog
        latest = catalog.latest_snapshot().snapshot_id
        with self._lock:
            since = self._snapshot
            if latest == since:
                return
            touched = None if since is None else tables_touched(
                catalog.snapshots(since=since), since, latest,
                lambda: catalog.tables_begun(since, latest))
            for name, floating in list(self._registered.items()):
                if floating and not self._still_current(name, touched):
                    self._drop(name)
            self._drop_functions()
            self._snapshot = latest
            self._looks += 1

    def _drop_functions(self) -> None:
        """Forget the lake functions registered at the latest snapshot (under the lock)."""
        for name, floating in list(self._functions.items()):
            if floating:
                self.spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS {quote(name)}")
                del self._functions[name]

    def _still_current(self, view: str, touched: frozenset[int] | None) -> bool:
        state = self._states.get(view)
        if touched is None or not isinstance(state, TableState):
            return False
        name = parse_name([view])
        return name is not None and name.plain and state.table.table_id not in touched

    def _drop(self, view: str) -> None:
        self.spark.catalog.dropTempView(view)
        self._registered.pop(view, None)
        self._states.pop(view, None)

    def invalidate(self, name: LakeName | None = None) -> None:
        """Drop the view of ``name``, or every floating view (the session's views go with a
        branch's runtime); after a commit, :meth:`lake_changed` drops only the stale ones."""
        with self._lock:
            names = [name.view_name] if name else [n for n, f in self._registered.items() if f]
            for view in names:
                if view in self._registered:
                    self._drop(view)
            if name is None:
                self._drop_functions()
            self._snapshot = None

    def register(self, name: LakeName) -> bool:
        """Register one lake relation; ``False`` when the lake has no such relation.

        If the registry looked at the lake while the relation was being loaded, the view may
        show a snapshot from before a commit that look let pass: the next look then checks
        every view (drops every floating one), as it did before views were kept."""
        with self._lock:
            looks = self._looks
        registered = self._register(name)
        with self._lock:
            if registered and self._looks != looks:
                self._snapshot = None
        return registered

    def _register(self, name: LakeName) -> bool:
        if not name.schema:
            return self._register_snapshots(name)
        if name.feed is not None:
            return self._register_feed(name)
        lake = self.lake.catalog
        version: int | None
        if name.version is not None:
            version = name.version
        elif name.timestamp is not None:
            version = lake.snapshot(timestamp=name.timestamp).snapshot_id
        else:
            version = self.pinned_version
        try:
            state = load_state(lake, name.schema, name.name, version)
        except NotFoundError:
            return self._register_view(name, version)
        df = scan(self.spark, state)
        self._publish(name, df, state)
        return True

    def _publish(self, name: LakeName, df: DataFrame,
                 state: TableState | tuple[str, ChangeSources] | ViewBody | None = None
                 ) -> None:
        floating = self.pinned_version is None and (
            name.plain or name.timestamp is not None or (name.feed is not None and not name.end))
        with self._lock:
            df.createOrReplaceTempView(quote(name.view_name))
            self._registered[name.view_name] = floating
            if state is not None:
                self._states[name.view_name] = state
            else:
                self._states.pop(name.view_name, None)

    def _register_feed(self, name: LakeName) -> bool:
        lake = self.lake.catalog
        start = name.start if name.start is not None else \
            lake.snapshots()[0].snapshot_id
        end = name.end if name.end is not None else (
            self.pinned_version if self.pinned_version is not None
            else lake.latest_snapshot().snapshot_id)
        sources = load_sources(lake, name.schema, name.name, start, end)
        assert name.feed is not None
        self._publish(name, FEED_BUILDERS[name.feed](self.spark, sources), (name.feed, sources))
        return True

    def _register_snapshots(self, name: LakeName) -> bool:
        lake = self.lake.catalog
        if name.name == CURRENT_SNAPSHOT:
            rows = [lake.snapshot(version=self.pinned_version)]
        elif name.name == SNAPSHOTS:
            rows = [s for s in lake.snapshots()
                    if self.pinned_version is None or s.snapshot_id <= self.pinned_version]
        else:
            return False
        # DuckDB's ducklake_snapshots(): ``changes`` is a map from the kind of change to the
        # ids or names it touched
        schema = StructType([
            StructField("snapshot_id", LongType()), StructField("snapshot_time", TimestampType()),
            StructField("schema_version", LongType()),
            StructField("changes", MapType(StringType(), ArrayType(StringType()))),
            StructField("author", StringType()), StructField("commit_message", StringType()),
            StructField("commit_extra_info", StringType())])
        df = local_frame(self.spark, [
            (s.snapshot_id, s.snapshot_time, s.schema_version,
             list(changes_map(s.changes_made).items()), s.author, s.commit_message,
             s.commit_extra_info) for s in rows], schema)
        with self._lock:
            df.createOrReplaceTempView(quote(name.view_name))
            self._registered[name.view_name] = self.pinned_version is None
        return True

    def _register_view(self, name: LakeName, version: int | None) -> bool:
        lake = self.lake.catalog
        with lake.read() as conn:
            at = lake.snapshot(version=version, conn=conn).snapshot_id if version is not None \
                else None
            views = [v for v in lake.views(name.schema, at, conn) if v.view_name == name.name]
        if not views:
            return False
        view = views[0]

        def columns(schema_name: str, table_name: str) -> dict[str, str] | None:
            try:
                table = lake.table(schema_name, table_name, at)
            except NotFoundError:
                return None
            return {c.column_name: duckdb_type(c) for c in lake.columns(table.table_id, at)}

        body = ViewBody(spark_query(view, name.schema, columns), tuple(view.aliases))
        prefix = body.create(name.view_name, "")
        try:
            final = self.create_view(f"{name.schema}.{name.name}",
                                     body.create(name.view_name))
        except UnsafeViewError as exc:
            if view.spark_sql is not None or view.dialect.lower() == SPARK:
                raise
            raise UnsafeViewError(
                f"{exc} (it was written in {view.dialect} SQL as: {view.sql}; translated to "
                f"Spark SQL: {body.sql})") from None
        except AnalysisException as exc:
            if view.spark_sql is not None or view.dialect.lower() == SPARK:
                raise
            raise UnsupportedViewError(
                f"view {name.schema}.{name.name} was written in {view.dialect} SQL and its "
                f"Spark translation fails: {str(exc).strip().splitlines()[0]}. Translated "
                f"query: {body.sql} (written as: {view.sql})") from None
        with self._lock:
            self._registered[name.view_name] = name.plain and self.pinned_version is None
            # the body as registered (two-part names made view names), to skip its tables' files
            self._states[name.view_name] = replace(body, sql=final[len(prefix):])
        return True

    def create_view(self, view: str, statement: str) -> str:
        """Run ``statement``, the ``CREATE OR REPLACE TEMP VIEW ... AS <query>`` that
        registers the lake view ``view`` (or checks a new one), once its query is known to be
        only a query over lake relations (:func:`.view_guard.check_view`): lake content is
        untrusted, and Spark's analysis of a name like ``parquet.`/path``` already reads
        files. The relations it names are registered and pointed at first, so the text
        checked is the text run (up to the names of views registered again). Returns it."""
        text = self._prepared(statement)
        check_view(self.spark, view, text, self._lake_relation, self._lake_function)
        _, final = self._run(self.spark.sql, text)
        return final or text

    # ---------------------------------------------------------------------- functions
    def function_name(self, parts: Sequence[str]) -> tuple[str, str] | None:
        """``(schema, function)`` a call's name parts name in the lake: `` `s.f` `` (as dbt
        renders a function), ``s.f``, or ``f`` in :attr:`function_schema`."""
        if len(parts) == 2:
            return parts[0], parts[1]
        if len(parts) == 1 and "." in parts[0] and "@" not in parts[0]:
            schema, name = parts[0].split(".", 1)
            return schema, name
        if len(parts) == 1 and self.function_schema:
            return self.function_schema, parts[0]
        return None

    def register_function(self, parts: Sequence[str]) -> str | None:
        """Register the lake function a call names (:meth:`function_name`) as the temp
        function `` `schema.name` ``, at the current (or pinned) snapshot, once its
        definition passes :func:`.view_guard.check_function`; its temp name, or ``None``
        when the lake has no such function."""
        found = self.function_name(parts)
        if found is None:
            return None
        schema, name = found
        macros = [m for m in self.lake.functions(schema, self.pinned_version)
                  if m.macro_name.lower() == name.lower()]
        if not macros:
            return None
        macro = macros[0]
        temp = f"{macro.schema_name}.{macro.macro_name}"
        if macro.spark_sql is None:
            raise UnsupportedViewError(
                f"function {temp} is a DuckDB macro ({macro.kind}, written in "
                f"{macro.dialect} SQL as: {macro.sql}); Spark runs the functions this adapter "
                "creates (CREATE FUNCTION or a dbt function), whose Spark definition the lake "
                "keeps, not DuckDB's macros")
        self.create_function(temp, macro.spark_sql)
        with self._lock:
            self._functions[temp] = self.pinned_version is None
        return temp

    def create_function(self, temp: str, definition: str, function: str | None = None) -> None:
        """Register the function ``definition`` (what follows the name in ``CREATE FUNCTION``)
        as the temp function ``temp`` once :func:`.view_guard.check_function` passes it: lake
        content is untrusted. Spark analyses the body here, registering what it reads.
        ``function`` is the lake function's name for errors (``temp`` by default)."""
        statement = f"CREATE OR REPLACE TEMPORARY FUNCTION {quote(temp)}{definition}"
        check_function(self.spark, function or temp, statement, self._lake_relation,
                       self._lake_function)
        self._run(self.spark.sql, statement)

    def prepared(self, sql: str) -> str:
        """``sql`` with the lake relations it names registered and its two-part names
        pointed at their views (what every statement gets before Spark analyses it)."""
        return self._prepared(sql)

    def _lake_function(self, parts: list[str]) -> bool:
        """Whether a function a checked body calls is a lake function (registering it)."""
        found = self.function_name(parts)
        if found is None:
            return False
        with self._lock:
            if f"{found[0]}.{found[1]}" in self._functions:
                return True
        return self.register_function(parts) is not None

    def _lake_relation(self, text: str) -> bool:
        """Whether the one-part relation name ``text`` is a lake relation registered as a
        temp view, registering it if the lake has it (not a session's temp view or a table of
        Spark's catalog, which a lake view must not read)."""
        name = parse_name([text])
        if name is None:
            return False
        with self._lock:
            if text in self._registered or name.view_name in self._registered:
                return True
        return self.register(name)

    def run_with_views(self, action, sql: str | None = None):  # noqa: ANN001, ANN201
        """Run ``action``; when Spark misses a lake relation, register it and run again.

        With ``sql``, ``action`` takes the statement text. A two-part reference
        (``schema.table``, as users and DuckDB write it) cannot name a temp view, so the
        reference Spark reports is rewritten, at the position Spark gives, to the one
        identifier `` `schema.table` `` before the retry.
        """
        return self._run(action, None if sql is None else self._prepared(sql))[0]

    def _prepared(self, sql: str) -> str:
        """``sql`` with the lake relations it names registered and pointed at their views
        (:meth:`_register_named`), as far as the parser finds them."""
        named = self._named(sql)
        return sql if named is None else self._register_named(sql, named)

    def prepared_condition(self, condition: str) -> str:
        """A DELETE's or UPDATE's condition (or SET value) with the lake relations its
        subqueries name registered and pointed at their views, as :meth:`_prepared` does
        for a statement: ``c.k IN (SELECT t.k FROM s.t)`` is planned as a column
        expression, whose analysis cannot rewrite a two-part name (it has no text)."""
        if not _SUBQUERY.search(condition):
            return condition
        prefix = "SELECT 1 WHERE "
        text = self._prepared(prefix + condition)
        return text[len(prefix):] if text.startswith(prefix) else condition

    def query(self, build: Callable[[str], DataFrame], sql: str, plan: Any = None) -> DataFrame:
        """The DataFrame ``build`` makes of the query ``sql``, reading only the data files
        its filters can match (:meth:`plan_over_kept_files`). ``plan``, if given, is the part
        of ``sql``'s parsed plan that ``build`` analyses (a MERGE's source, not its target)."""
        named = self._named(sql, plan)
        text = sql if named is None else self._register_named(sql, named)
        df, final = self._run(build, text)
        if named is not None and final == text and not skipping.worth_skipping(
                self.spark, self._files_read(self._named_views(named))):
            return df  # too few bytes to skip: no walk of the edited text's references
        return self.plan_over_kept_files(build, final or text, df,
                                         named if final == sql else None)

    @staticmethod
    def _named_views(named: Named) -> list[str]:
        """The view names of every relation ``named`` holds (CTEs and names that are no lake
        relation's included): a superset of the views the statement, once its names are
        pointed at views, reads."""
        names = [parse_name([text]) for _, _, text in named.single]
        names += [LakeName(schema, table) for _, _, (schema, table) in named.qualified]
        return [name.view_name for name in names if name is not None]

    def _register_named(self, sql: str, named: Named) -> str:
        """Register, before Spark analyses ``sql``, the lake relations it names that Spark
        cannot resolve otherwise; ``sql`` with its two-part lake names (``schema.table``)
        replaced by their temp views' names.

        :meth:`_run` does the same when Spark's analysis fails to find a relation, but a
        failed analysis costs more than the registration: the Java exception is converted to
        Python in a dozen calls into the JVM (a tenth of a small ``dbt snapshot``'s time).
        Names are taken as :meth:`_run` would take them: one-part names no temp view answers
        and two-part names no table of Spark's own catalog answers. A name missed here (a
        view another thread dropped meanwhile) still takes that path.
        """
        catalog = self.spark._jsparkSession.sessionState().catalog()  # noqa: SLF001
        for text in {text for _, _, text in named.single}:
            name = parse_name([text])
            if name is None or text.lower() in named.ctes:
                continue
            with self._lock:
                if name.view_name in self._registered:
                    continue
            try:
                if not catalog.getTempView(text).isDefined():
                    self.register(name)
            except UnsafeViewError:
                raise
            except Exception:  # noqa: BLE001 - analysis finds the name and says what is wrong
                log.debug("registering %s ahead of analysis failed", text, exc_info=True)
        edits: list[tuple[int, int, str, str | None]] = []
        for start, stop, (schema, table) in named.qualified:
            name = LakeName(schema, table)
            try:
                if self._spark_resolves(schema, table):
                    continue
                with self._lock:
                    listed = name.view_name in self._registered
                if not listed and not self.register(name):
                    continue
            except UnsafeViewError:
                raise
            except Exception:  # noqa: BLE001 - as above
                log.debug("registering %s.%s ahead of analysis failed", schema, table,
                          exc_info=True)
                continue
            edits.append((start, stop, name.view_name, table))
        with self._lock:
            registered = set(self._registered)
        for start, stop, text in named.single:
            name = parse_name([text])
            if name is not None and name.schema and \
                    (text in registered or name.view_name in registered) and \
                    text.lower() not in named.ctes and sql[start:stop] == quote(text) and \
                    quote(text) + "." not in sql:  # unless columns are qualified by it
                edits.append((start, stop, text, name.name))
        edits = [(start, stop, view, None if start in named.aliased else alias)
                 for start, stop, view, alias in edits]
        return _edited(sql, edits, self._parser, named, self._schema_qualified(sql, edits))

    def _schema_qualified(self, sql: str, edits: list[tuple[int, int, str, str | None]]
                          ) -> list[tuple[int, int, str, str]]:
        """Columns of ``sql`` qualified by schema and table (``s.t.id``, ``s.t.*``) whose
        table the edits point at a view without an alias of the statement's own:
        ``(start, stop, view name, the column's name after its qualifier)``. The plan's
        expressions are walked only when the text has such a name."""
        tables: dict[tuple[str, str], str] = {}
        for _, _, view, alias in edits:
            name = parse_name([view])
            if alias is not None and name is not None and name.schema and name.plain:
                tables[(name.schema.lower(), name.name.lower())] = view
        if not any(re.search(rf"(?<![\w`.])`?{re.escape(schema)}`?\s*\.\s*`?"
                             rf"{re.escape(table)}`?\s*\.", sql, re.IGNORECASE)
                   for schema, table in tables):
            return []
        try:
            plan = self._parser.parsePlan(sql)
        except Exception:  # noqa: BLE001 - the statement parsed before; nothing to add
            return []
        return qualified_columns(plan, tables)

    def _run(self, action, sql: str | None) -> tuple[Any, str | None]:  # noqa: ANN001
        attempts = 0
        while True:
            try:
                return (action(sql) if sql is not None else action()), sql
            except AnalysisException as exc:
                routine = missing_routine(exc)
                if routine is not None and attempts < MAX_REGISTRATIONS_PER_STATEMENT:
                    sql = self._retry_function(exc, routine, sql)
                    attempts += 1
                    continue
                parts = missing_relation(exc)
                if parts is None or attempts >= MAX_REGISTRATIONS_PER_STATEMENT:
                    raise
                name = parse_name(parts)
                if name is None:
                    raise
                if len(parts) > 1:
                    span = _fragment(exc, sql)
                    if span is None:
                        raise
                    start, stop = span
                    sql = sql[:start] + quote(name.view_name) + sql[stop:]  # type: ignore[index]
                    with self._lock:
                        listed = name.view_name in self._registered
                    if listed:  # retried under its view name; registered if that misses
                        attempts += 1
                        sql = self._prepared(sql)
                        continue
                # Register even when the registry lists it: another thread may have dropped
                # the view (a commit invalidates views) while this statement was analysed.
                if not self.register(name):
                    raise
                attempts += 1
                # the name, registered now, gets the alias it would have had ahead of analysis
                sql = None if sql is None else self._prepared(sql)

    def _retry_function(self, exc: AnalysisException, parts: list[str],
                        sql: str | None) -> str | None:
        """Register the lake function Spark could not resolve; ``sql`` with the call's name
        made its temp function's name where it was spelled otherwise (``s.f``, ``f``).
        Raises ``exc`` when the lake has no such function or the call cannot be renamed."""
        temp = self.register_function(parts)
        if temp is None:
            raise exc
        if len(parts) == 1 and parts[0] == temp:
            return sql
        span = _fragment(exc, sql)
        if span is None or sql is None:
            raise exc
        start = span[0]
        stop = call_name_end(sql, start)
        if stop is None:
            raise exc
        return sql[:start] + quote(temp) + sql[stop:]

    # ---------------------------------------------------------------------- file skipping
    def plan_over_kept_files(self, build: Callable[[str], DataFrame], sql: str,
                             df: DataFrame, named: Named | None = None) -> DataFrame:
        """``df`` planned again over only the data files its filters can match.

        Spark has pushed the query's filters onto the scans of each lake table in ``df``'s
        optimised plan (:func:`.skipping.scan_filters`); every table whose catalog stats rule
        files out gets a view of the kept files, registered under a name of
        its own for this statement, and the references to the table in ``sql`` are pointed
        at it. A DuckLake view the statement names is registered again for the statement
        with its own references rewritten the same way. CTEs named like a table are left as
        they are (still right, only read whole). Logs one line per table read.
        """
        references = self._references(sql, named)
        if not references or not skipping.worth_skipping(
                self.spark, self._files_read([r.view for r in references])):
            return df
        try:
            filters = skipping.scan_filters(self.spark, df)
        except Exception:  # noqa: BLE001 - skipping is an optimisation: never fail a query
            log.debug("file skipping: cannot inspect the plan", exc_info=True)
            return df
        kept: dict[str, str] = {}  # view name -> its kept name ("": read it whole)

        def kept_view(view: str) -> str:
            if view in kept:
                return kept[view]
            kept[view] = ""  # a view naming itself (it cannot) would stop here
            source = self._states.get(view)
            name = f"{view}@files:{next(self._kept_views)}"
            if isinstance(source, ViewBody):
                body = self._rewrite(source.sql, kept_view)
                if body is None:
                    return ""
                self._run(self.spark.sql, source.create(name, body))
            elif source is not None:
                view_df = self._kept_files_view(source, filters)
                if view_df is None:
                    return ""
                view_df.createOrReplaceTempView(quote(name))
            else:
                return ""
            kept[view] = name
            return name

        try:
            text = self._rewrite(sql, kept_view, references)
            if text is None:
                return df
            # through _run: another thread's commit may have dropped a view meanwhile
            return self._run(build, text)[0]
        finally:  # the analysed plan holds the views' plans: the names are no longer needed
            for name in kept.values():
                if name:
                    self.spark.catalog.dropTempView(name)

    def _files_read(self, views: list[str]) -> Iterator[DataFile]:
        """The data files the registered views ``views`` read, with those of the lake views
        they name (each view looked at once)."""
        seen: set[str] = set()
        while views:
            view = views.pop()
            if view in seen:
                continue
            seen.add(view)
            source = self._states.get(view)
            if isinstance(source, ViewBody):
                views.extend(r.view for r in self._references(source.sql))
            elif isinstance(source, tuple):
                yield from source[1].inserted_files
                yield from (scan.data_file for scan in source[1].deletion_scans)
            elif source is not None:
                yield from source.data_files

    def _rewrite(self, sql: str, kept_view: Callable[[str], str],
                 references: list[Reference] | None = None) -> str | None:
        """``sql`` with each lake relation it names (``references``, if already found)
        replaced by ``kept_view(name)`` where that is not empty; ``None`` when nothing changes.
        A reference without an alias is given its old name as one, so columns qualified by
        it (`` `s.t`.id ``) still resolve."""
        found = self._references(sql) if references is None else references
        edits = []
        for ref in found:
            name = kept_view(ref.view)
            if name:
                edits.append((ref.start, ref.stop, name, None if ref.aliased else ref.view))
        return _edited(sql, edits, self._parser) if edits else None

    def _kept_files_view(self, source: TableState | tuple[str, ChangeSources],
                         filters: list[skipping.ScanFilter]) -> DataFrame | None:
        """The view over only the files the filters may need (``None``: all are needed)."""
        if isinstance(source, tuple):  # a change feed: its files need not be live at its end
            feed, sources = source
            files = {f.data_file_id: f for f in sources.inserted_files}
            files.update((s.data_file.data_file_id, s.data_file) for s in sources.deletion_scans)
            state = replace(sources.base, data_files=sorted(files.values(),
                                                            key=lambda f: f.data_file_id))
        else:
            state = source
        mine = [f for f in filters if f.scan.table_id == state.table.table_id
                and f.scan.snapshot_id == state.snapshot_id]
        skipped = skipping.skip_table_files(self.lake.catalog, state, mine,
                                 live=not isinstance(source, tuple))
        log.debug(skipping.Reading(f"{state.schema.schema_name}.{state.table.table_name}",
                                   state.snapshot_id, skipped).describe())
        if len(skipped.kept) == skipped.total:
            return None
        if not isinstance(source, tuple):
            return scan(self.spark, replace(state, data_files=skipped.kept))
        kept = {f.data_file_id for f in skipped.kept}
        return FEED_BUILDERS[feed](self.spark, replace(
            sources, inserted_files=[f for f in sources.inserted_files if f.data_file_id in kept],
            deletion_scans=[s for s in sources.deletion_scans
                            if s.data_file.data_file_id in kept]))

    def _spark_resolves(self, schema: str, table: str) -> bool:
        """Whether Spark resolves ``schema.table`` itself: a catalog of that name, a global
        temp view or a table of the session catalog. (Not ``spark.catalog.tableExists``,
        which takes 60 ms for a database that does not exist.)"""
        jss = self.spark._jsparkSession  # noqa: SLF001
        state = jss.sessionState()
        catalog = state.catalog()
        if state.catalogManager().isCatalogRegistered(schema) or \
                schema.lower() == catalog.globalTempDatabase().lower():
            return True
        return bool(catalog.databaseExists(schema)) and bool(catalog.tableExists(
            java_class(self.spark, "org.apache.spark.sql.catalyst.TableIdentifier").apply(
                table, java_class(self.spark, "scala.Option").apply(schema))))

    def _named(self, sql: str, plan: Any = None) -> Named | None:
        """The relation names in ``sql`` (in ``plan``, a part of its parsed plan, if given);
        ``None`` if Spark cannot parse it."""
        if plan is None:
            try:
                plan = self._parser.parsePlan(sql)
            except Exception:  # noqa: BLE001
                return None
        return relation_names(parsed_tree(self.spark, plan))

    def _references(self, sql: str, named: Named | None = None) -> list[Reference]:
        """Every reference in ``sql`` to a registered lake table view; none for a name a CTE
        shadows. ``named`` is :meth:`_named` of ``sql`` if already known."""
        named = self._named(sql) if named is None else named
        if named is None:
            return []
        found, ctes = named.single, named.ctes
        with self._lock:
            known = set(self._states)
        out = []
        for start, stop, name in set(found):
            if name in known and name.lower() not in ctes and \
                    sql[start:stop] == quote(name):
                out.append(Reference(start, stop, name, start in named.aliased))
        return out


# a condition that may name relations: only a subquery can
_SUBQUERY = re.compile(r"\b(select|table)\b", re.IGNORECASE)

def _edited(sql: str, edits: list[tuple[int, int, str, str | None]], parser: Any,
            named: Named | None = None,
            columns: Sequence[tuple[int, int, str, str]] = ()) -> str:
    """``sql`` with each span ``[start, stop)`` of ``edits`` replaced by a view name, followed
    by ``AS alias`` where one is given; and the ``columns`` qualified by schema and table
    (``s.t.id``) qualified by their table's alias, or by its view's name where it has none.

    The alias keeps the statement's column references meaning what they would for a table
    of Spark's own catalog: ``SELECT t.id FROM s.t`` qualifies ``id`` by the table's name,
    which a temp view named `` `s.t` `` does not answer to. No alias is added where the
    statement has one already, where two tables of the statement share a name (``FROM s.t
    JOIN o.t``: ``t.id`` is ambiguous, as in Spark, and ``s.t.id`` names the view), or where
    the statement gives that name to another relation (a CTE's name does not count: inside
    its own definition it is not in scope, and beside it Spark too finds ``t.id``
    ambiguous); and none at all when the text with them does not parse (``TABLE s.t``,
    ``FROM s.t TABLESAMPLE (...)``: the grammar puts no alias there, or puts it elsewhere).
    """
    busy = set() if named is None else named.aliases - named.ctes
    views: dict[str, set[str]] = {}  # alias -> the views it would name
    for _, _, view, alias in edits:
        if alias is not None:
            views.setdefault(alias.lower(), set()).add(view.lower())
    ok = {alias for alias, named_views in views.items()
          if len(named_views) == 1 and alias not in busy}

    def apply(with_aliases: bool) -> str:
        given = {view: alias for _, _, view, alias in edits
                 if with_aliases and alias is not None and alias.lower() in ok}
        spans = [(start, stop, quote(view) + (f" AS {quote(given[view])}" if view in given
                                              and alias is not None else ""))
                 for start, stop, view, alias in edits]
        spans += [(start, stop, f"{quote(given.get(view, view))}.{rest}")
                  for start, stop, view, rest in columns]
        text = sql
        for start, stop, replacement in sorted(spans, reverse=True):
            text = text[:start] + replacement + text[stop:]
        return text

    text = apply(True)
    if text != apply(False):
        try:
            parser.parsePlan(text)
        except Exception:  # noqa: BLE001 - no alias fits here: the names alone, as before
            return apply(False)
    return text


def call_name_end(sql: str, start: int) -> int | None:
    """The end of the function name of the call at ``start`` (``s.f(``, `` `s`.`f` (``):
    the position of its opening parenthesis, whitespace before it excluded."""
    i, quoted = start, False
    while i < len(sql):
        char = sql[i]
        if char == "`":
            quoted = not quoted
        elif not quoted and char == "(":
            end = i
            while end > start and sql[end - 1].isspace():
                end -= 1
            return end
        elif not quoted and not (char.isalnum() or char in "_." or char.isspace()):
            return None
        i += 1
    return None


def _fragment(exc: AnalysisException, sql: str | None) -> tuple[int, int] | None:
    """The [start, stop) span of the failing relation in ``sql``, from Spark's query context."""
    if sql is None:
        return None
    try:
        contexts = exc.getQueryContext()
    except Exception:  # noqa: BLE001
        return None
    for context in contexts or []:
        try:
            fragment = context.fragment()
            start = context.startIndex()
            stop = context.stopIndex()
        except Exception:  # noqa: BLE001
            continue
        if start is None or stop is None or start < 0:
            continue
        if sql[start:stop + 1] == fragment:
            return start, stop + 1
    return None
