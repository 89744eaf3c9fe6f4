"""The ducklake adapter: a thin dbt surface over the lake client and the statement engine.

Listing relations and columns reads the DuckLake catalog directly (one query per schema);
everything that changes data goes through SQL statements the engine carries out, or through
the few ``@available`` methods macros call (seeds, Python models, docs).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import AdapterConfig, available
from dbt.adapters.base.impl import ConstraintSupport
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.capability import Capability, CapabilityDict, CapabilitySupport, Support
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.sql import SQLAdapter
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.exceptions import DbtRuntimeError

from .column import DuckLakeColumn
from .connections import DuckLakeConnectionManager, Runtime
from .lake import inlined_data
from .lake.errors import DuckLakeError, NotFoundError
from .relation import DuckLakeRelation
from .spark.lake import UNCHANGED
from .spark.types import spark_type
from .sql.views import LakeName

if TYPE_CHECKING:
    import agate


class DuckLakeConfig(AdapterConfig):
    file_format: str | None = None  # validated: DuckLake tables are Parquet
    # table maintenance run after the model commits, e.g. ['flush_inlined_data']
    post_commit_maintenance: list[Any] | None = None


class DuckLakeAdapter(SQLAdapter):
    ConnectionManager = DuckLakeConnectionManager
    Relation = DuckLakeRelation
    Column = DuckLakeColumn
    AdapterSpecificConfigs = DuckLakeConfig

    CONSTRAINT_SUPPORT = {
        ConstraintType.check: ConstraintSupport.NOT_SUPPORTED,
        ConstraintType.not_null: ConstraintSupport.ENFORCED,
        ConstraintType.unique: ConstraintSupport.NOT_ENFORCED,
        ConstraintType.primary_key: ConstraintSupport.NOT_ENFORCED,
        ConstraintType.foreign_key: ConstraintSupport.NOT_ENFORCED,
    }

    _capabilities = CapabilityDict({
        Capability.TableLastModifiedMetadata: CapabilitySupport(support=Support.Full),
    })

    # ------------------------------------------------------------------ basics
    @classmethod
    def date_function(cls) -> str:
        return "current_timestamp()"

    @classmethod
    def is_cancelable(cls) -> bool:
        return False

    def quote(self, identifier: str) -> str:
        return "`" + str(identifier).replace("`", "``") + "`"

    @classmethod
    def convert_text_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "string"

    @classmethod
    def convert_number_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        import agate

        decimals = agate_table.aggregate(agate.MaxPrecision(col_idx))
        return "double" if decimals else "bigint"

    @classmethod
    def convert_integer_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "bigint"

    @classmethod
    def convert_boolean_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "boolean"

    @classmethod
    def convert_datetime_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "timestamp"

    @classmethod
    def convert_date_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "date"

    @classmethod
    def convert_time_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "string"

    def debug_query(self) -> None:
        """`dbt debug`: Java and Spark (by opening), the catalog, the data path, a query."""
        from .connections import check_data_path

        runtime = self.runtime()
        runtime.lake.lake.latest_snapshot()
        check_data_path(runtime.lake.lake.data_path)
        self.execute("select 1 as id")

    def valid_incremental_strategies(self) -> list[str]:
        return ["merge", "append", "delete+insert", "insert_overwrite", "microbatch"]

    # ------------------------------------------------------------------ runtime
    def runtime(self) -> Runtime:
        """The shared Spark/lake runtime; also marks which dbt node this thread commits for."""
        from .connections import set_current_node

        connection = self.connections.get_thread_connection()
        connection = self.connections.open(connection)
        set_current_node(connection.name)
        return connection.handle.runtime

    # ------------------------------------------------------------------ listing
    def list_schemas(self, database: str) -> list[str]:
        return [s.schema_name for s in self.runtime().lake.lake.schemas()]

    def check_schema_exists(self, database: str, schema: str) -> bool:
        return schema in self.list_schemas(database)

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        lake = self.runtime().lake.lake
        out: list[BaseRelation] = []
        for kind, name in lake.relations(schema_relation.schema):
            out.append(self.Relation.create(
                database=schema_relation.database, schema=schema_relation.schema,
                identifier=name,
                type=RelationType.View if kind == "view" else RelationType.Table,
            ))
        return out

    def get_columns_in_relation(self, relation: BaseRelation) -> list[DuckLakeColumn]:
        runtime = self.runtime()
        if relation.schema and relation.identifier:
            lake = runtime.lake.lake
            try:
                with lake.read() as conn:
                    at = runtime.registry.pinned_version
                    table = lake.table(relation.schema, relation.identifier, at, conn)
                    columns = lake.columns(table.table_id, at, conn)
                return [DuckLakeColumn(c.column_name, _type_name(c)) for c in columns]
            except NotFoundError:
                pass
        try:
            df = runtime.registry.run_with_views(lambda: runtime.spark.table(relation.render()))
        except Exception:  # noqa: BLE001 - no such relation: dbt expects an empty list
            return []
        return [DuckLakeColumn(f.name, f.dataType.simpleString()) for f in df.schema.fields]

    # ------------------------------------------------------------------ writes from macros
    @available
    def ducklake_load_seed(self, relation: BaseRelation, agate_table: agate.Table,
                           column_types: dict[str, str], full_refresh: bool,
                           quote_columns: bool | None = None, delimiter: str = ",") -> int:
        """Create or replace a seed table from a CSV in one snapshot; returns the row count."""
        from pyspark.sql import functions as F

        runtime = self.runtime()
        _check_writable(runtime)
        names = list(agate_table.column_names)
        if quote_columns is False:
            _check_seed_header(relation, names, delimiter)
        types = {}
        for i, name in enumerate(names):
            types[name] = column_types.get(name) or self.convert_agate_type(agate_table, i)
        rows = [tuple(_seed_text(v) for v in row) for row in agate_table.rows]
        schema = ", ".join(f"{self.quote(n)} string" for n in names)
        df = runtime.spark.createDataFrame(rows, schema)
        df = df.select(*[F.col(self.quote(n)).cast(types[n]).alias(n) for n in names])
        lake = runtime.lake
        name = (relation.schema, relation.identifier)
        existing = lake.lake.tables(relation.schema) if relation.schema in \
            [s.schema_name for s in lake.lake.schemas()] else []
        info = runtime.engine.commit_info("SEED")
        if relation.schema not in [s.schema_name for s in lake.lake.schemas()]:
            lake.create_schema(relation.schema, if_not_exists=True, info=info)
        if any(t.table_name == relation.identifier for t in existing):
            if full_refresh:
                lake.drop_table(name, info=info)
                lake.create_table(name, df, info=info)
            else:
                lake.table(name).replace(df, info=info)
        else:
            lake.create_table(name, df, info=info)
        runtime.registry.invalidate()
        return len(rows)

    @available
    def ducklake_replace_table(self, relation: BaseRelation, sql: str, not_null: list[str],
                               sql_header: str | None = None,
                               partition_by: list[str] | None = None) -> str:
        """CREATE OR REPLACE TABLE with NOT NULL columns checked before the one commit."""
        runtime = self.runtime()
        engine = runtime.engine
        if sql_header:
            engine.execute(sql_header)
        df = runtime.registry.run_with_views(runtime.spark.sql, sql)
        name = LakeName(relation.schema, relation.identifier)  # type: ignore[arg-type]
        result = engine.replace_table(name, df, tuple(not_null), partition_by=partition_by or [])
        snapshot = result.snapshot.snapshot_id if result.snapshot else "?"
        return f"{result.kind} (snapshot {snapshot})"

    @available
    def ducklake_changes_window(self, relation: BaseRelation, node_id: str,
                                incremental: bool) -> dict[str, int | None]:
        """The snapshot range of ``relation``'s changes this model has not consumed yet.

        ``start`` is one past the watermark the model's last data write recorded (``None`` on
        a first or full-refresh run: every change since the table began); ``end`` is the
        current snapshot, which becomes the new watermark when this run's write commits.
        """
        import json

        from .connections import WATERMARKS_KEY, set_watermark

        lake = self.runtime().lake.lake
        key = f"{relation.schema}.{relation.identifier}".lower()
        end = lake.latest_snapshot().snapshot_id
        start = None
        if incremental:
            # commit_extra_info is JSON written with sorted keys: the node's writes contain
            # this fragment, so the catalog finds them without reading the whole history
            fragment = json.dumps({"node_unique_id": node_id})[1:-1]
            for snapshot in lake.snapshots_with_extra_info(fragment):
                try:
                    extra = json.loads(snapshot.commit_extra_info or "{}")
                except ValueError:
                    continue
                if isinstance(extra, dict) and extra.get("node_unique_id") == node_id and \
                        key in (extra.get(WATERMARKS_KEY) or {}):
                    start = int(extra[WATERMARKS_KEY][key]) + 1
                    break
        set_watermark(key, end)
        return {"start": start, "end": end}

    @available
    def ducklake_partition_keys(self, relation: BaseRelation) -> list[str]:
        """The table's DuckLake partition keys, as ``region`` or ``year(ts)``; empty when it
        has no partition spec (or does not exist)."""
        try:
            table = self.runtime().lake.table((relation.schema, relation.identifier))
        except NotFoundError:
            return []
        return table.partitioning()

    # ------------------------------------------------------------------ maintenance
    @available
    def ducklake_maintenance(self, operation: str,
                             arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a lake maintenance operation (flush, merge, rewrite, expire, cleanup, orphans,
        checkpoint); returns its result as a dict with a ``summary`` line."""
        from . import maintenance

        runtime = self.runtime()
        try:
            result = maintenance.as_dict(maintenance.run(runtime.lake, operation, arguments))
        except DuckLakeError as exc:
            raise DbtRuntimeError(str(exc)) from exc
        runtime.registry.invalidate()
        return result

    @available
    def ducklake_post_commit_maintenance(self, relation: BaseRelation,
                                         operations: Any) -> list[dict[str, Any]]:
        """A model's ``post_commit_maintenance`` config, run on its table after it commits."""
        from . import maintenance

        if not operations:
            return []
        runtime = self.runtime()
        try:
            results = maintenance.post_commit(runtime.lake, relation.schema,  # type: ignore[arg-type]
                                              relation.identifier, operations)  # type: ignore[arg-type]
        except DuckLakeError as exc:
            raise DbtRuntimeError(str(exc)) from exc
        runtime.registry.invalidate()
        return results

    @available
    def ducklake_set_option(self, option: str, value: Any, schema: str | None = None,
                            table: str | None = None) -> str:
        """Set a lake option globally, for a schema, or for a table (no snapshot)."""
        try:
            setting = self.runtime().lake.set_option(option, value, schema, table)
        except DuckLakeError as exc:
            raise DbtRuntimeError(str(exc)) from exc
        scope = setting.scope_name or "the lake"
        return f"set {setting.key} = {setting.value} for {scope}"

    @available
    def ducklake_options(self) -> list[dict[str, Any]]:
        """Every option set on the lake, with its scope."""
        import dataclasses

        return [dataclasses.asdict(o) for o in self.runtime().lake.options()]

    @available
    def ducklake_persist_docs(self, relation: BaseRelation, description: str | None,
                              columns: dict[str, Any] | None) -> None:
        """Store descriptions as DuckLake ``comment`` tags (readable by DuckDB)."""
        runtime = self.runtime()
        _check_writable(runtime)
        lake = runtime.lake.lake
        name = (relation.schema, relation.identifier)
        comments: dict[str, str | None] = {}
        try:
            names = [c.column_name for c in lake.columns(lake.table(*name).table_id)]
        except NotFoundError:
            if not any(v.view_name == relation.identifier for v in lake.views(relation.schema)):
                return
            names = []  # a view's columns take no comments
        for key, column in (columns or {}).items():
            text = column.get("description") if isinstance(column, dict) else None
            quoted = isinstance(column, dict) and column.get("quote")
            match = key if key in names else None
            if match is None and not quoted:
                match = next((n for n in names if n.lower() == key.lower()), None)
            if text and match is not None:
                comments[match] = text
        runtime.lake.set_comments(name, UNCHANGED if description is None else description,
                                  comments, info=runtime.engine.commit_info("COMMENT"))

    # ------------------------------------------------------------------ docs
    @available
    def ducklake_catalog(self, schemas: list[str]) -> agate.Table:
        """Rows of ``dbt docs generate``'s catalog, from DuckLake metadata and statistics."""
        from dbt_common.clients.agate_helper import table_from_rows

        runtime = self.runtime()
        lake = runtime.lake.lake
        rows = []
        view_comments = {}
        with lake.read() as conn:
            wanted = {s.lower() for s in schemas}
            for table in lake.tables(None, None, conn):
                if table.schema_name.lower() not in wanted:
                    continue
                stats = inlined_data.live_size(lake, table.table_id, conn)
                comment = lake.comment(table.table_id, conn)
                col_comments = lake.column_comments(table.table_id, conn)
                for i, col in enumerate(lake.columns(table.table_id, None, conn)):
                    rows.append(_catalog_row(table.schema_name, table.table_name, "table",
                                             comment, col.column_name, i + 1,
                                             _type_name(col),
                                             col_comments.get(col.column_id), stats))
            views = [v for v in lake.views(None, None, conn)
                     if v.schema_name.lower() in wanted]
            for view in views:
                view_comments[view.view_id] = lake.comment(view.view_id, conn)
        for view in views:
            relation = self.Relation.create(schema=view.schema_name, identifier=view.view_name)
            try:
                fields = runtime.registry.run_with_views(
                    lambda r=relation: runtime.spark.table(r.render())).schema.fields
            except Exception:  # noqa: BLE001 - a view Spark cannot analyse has no columns
                continue
            for i, f in enumerate(fields):
                rows.append(_catalog_row(view.schema_name, view.view_name, "view",
                                         view_comments[view.view_id], f.name, i + 1,
                                         f.dataType.simpleString(), None, None))
        columns = ["table_database", "table_schema", "table_name", "table_type", "table_comment",
                   "table_owner", "column_name", "column_index", "column_type", "column_comment",
                   "stats:row_count:label", "stats:row_count:value",
                   "stats:row_count:description", "stats:row_count:include",
                   "stats:bytes:label", "stats:bytes:value", "stats:bytes:description",
                   "stats:bytes:include"]
        # Nodes carry no database (the lake is the only one), so neither do catalog rows.
        return table_from_rows([[None, *r] for r in rows], columns)

    def get_catalog_for_single_relation(self, relation: BaseRelation) -> Any:
        """Table and column metadata of one relation, from the same rows as the docs catalog."""
        from dbt_common.contracts.metadata import (
            CatalogTable,
            ColumnMetadata,
            StatsItem,
            TableMetadata,
        )

        table = self.ducklake_catalog([relation.schema])
        rows = [r for r in table.rows if r["table_schema"] == relation.schema
                and r["table_name"] == relation.identifier]
        if not rows:
            return None
        first = rows[0]
        # The shape `dbt docs generate` builds from the same catalog columns (dbt-core's
        # format_stats): the stats that are shown, plus `has_stats`, never shown itself.
        stats = {key: StatsItem(id=key, label=first[f"stats:{key}:label"],
                                value=first[f"stats:{key}:value"], include=True,
                                description=first[f"stats:{key}:description"])
                 for key in ("row_count", "bytes") if first[f"stats:{key}:include"]}
        stats["has_stats"] = StatsItem(
            id="has_stats", label="Has Stats?", value=len(stats) > 0, include=False,
            description="Indicates whether there are statistics for this table")
        return CatalogTable(
            metadata=TableMetadata(type=first["table_type"], schema=relation.schema,
                                   name=relation.identifier, database=None,
                                   comment=first["table_comment"], owner=None),
            columns={r["column_name"]: ColumnMetadata(type=r["column_type"],
                                                      index=int(r["column_index"]),
                                                      name=r["column_name"],
                                                      comment=r["column_comment"])
                     for r in rows if r["column_name"] is not None},
            stats=stats,
        )

    @classmethod
    def _catalog_filter_table(cls, table: agate.Table, used_schemas: Any) -> agate.Table:
        """Filter catalog rows by schema only: a lake is one database, which relations omit."""
        from dbt_common.clients.agate_helper import table_from_rows

        schemas = {s.lower() for _, s in used_schemas if s is not None}
        table = table_from_rows(table.rows, table.column_names, text_only_columns=[
            "table_database", "table_schema", "table_name", "table_type", "table_comment",
            "table_owner", "column_name", "column_type", "column_comment"])
        return table.where(lambda row: (row["table_schema"] or "").lower() in schemas)

    @available
    def ducklake_last_modified(self, relations: list[BaseRelation]) -> Any:
        """For source freshness: the time of the last snapshot that changed each table.

        Returns what dbt expects of the macro: an object with ``response`` and ``table``.
        """
        import datetime as dt
        from types import SimpleNamespace

        from dbt.adapters.contracts.connection import AdapterResponse
        from dbt_common.clients.agate_helper import table_from_rows

        lake = self.runtime().lake.lake
        snapshots = lake.snapshots()
        rows = []
        for relation in relations:
            try:
                table = lake.table(relation.schema, relation.identifier)
            except NotFoundError:
                continue
            created = f'created_table:"{relation.schema}"."{relation.identifier}"'
            touched = {f"{kind}:{table.table_id}" for kind in (
                "inserted_into_table", "deleted_from_table", "inlined_insert", "inlined_delete",
                "altered_table")} | {created}
            last = None
            for snapshot in snapshots:
                if touched & set(snapshot.changes):
                    last = snapshot
            if last is not None:
                now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
                when = last.snapshot_time.astimezone(dt.timezone.utc).replace(tzinfo=None)
                rows.append([relation.schema, relation.identifier, when, now])
        table = table_from_rows(rows, ["schema", "identifier", "last_modified", "snapshotted_at"])
        return SimpleNamespace(response=AdapterResponse(_message="OK"), table=table)

    # ------------------------------------------------------------------ python models
    @available.parse_none
    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> Any:
        runtime = self.runtime()
        relation = self.Relation.create(schema=parsed_model["schema"],
                                        identifier=parsed_model["alias"])
        config = parsed_model.get("config", {})
        result: dict[str, Any] = {}

        def load(name: str) -> Any:
            return runtime.registry.run_with_views(lambda: runtime.spark.table(name))

        def write(df: Any) -> None:
            from pyspark.sql import DataFrame

            if not isinstance(df, DataFrame):
                # pandas-on-Spark frames convert themselves; pandas frames go through Arrow
                df = df.to_spark() if hasattr(df, "to_spark") else \
                    runtime.spark.createDataFrame(df)
            _check_writable(runtime)
            name = (relation.schema, relation.identifier)
            info = runtime.engine.commit_info("PYTHON MODEL")
            if not runtime.lake.lake.schemas() or relation.schema not in [
                    s.schema_name for s in runtime.lake.lake.schemas()]:
                runtime.lake.create_schema(relation.schema, if_not_exists=True, info=info)
            raw = config.get("partition_by") or config.get("partitioned_by") or []
            partition_by = [raw] if isinstance(raw, str) else list(raw)
            if f"{relation.schema}.{relation.identifier}" in runtime.lake.tables(relation.schema):
                runtime.lake.table(name).replace(df, info=info, partition_by=partition_by)
            else:
                runtime.lake.create_table(name, df, info=info, partition_by=partition_by)
            runtime.registry.invalidate()
            result["rows"] = -1

        def temp_view(df: Any, name: str) -> None:
            from pyspark.sql import DataFrame

            if not isinstance(df, DataFrame):
                df = df.to_spark() if hasattr(df, "to_spark") else \
                    runtime.spark.createDataFrame(df)
            df.createOrReplaceTempView(name)
            result["rows"] = -1

        scope = {"spark": runtime.spark, "ducklake_load": load, "ducklake_write": write,
                 "ducklake_temp_view": temp_view, "__name__": "__dbt_python_model__"}
        # Template indentation lands before the first line; module code starts at column 0.
        code = compiled_code.lstrip()
        try:
            exec(compile(code, f"<python model {parsed_model['unique_id']}>", "exec"), scope)
        except DuckLakeError as exc:
            raise DbtRuntimeError(f"Python model failed: {exc}") from exc
        from dbt.adapters.contracts.connection import AdapterResponse

        return AdapterResponse(_message="OK")

    def generate_python_submission_response(self, submission_result: Any) -> Any:
        return submission_result

    @property
    def default_python_submission_method(self) -> str:
        return "session"

    @property
    def python_submission_helpers(self) -> dict[str, Any]:
        return {}



def _check_writable(runtime: Runtime) -> None:
    try:
        runtime.engine.check_writable()
    except DuckLakeError as exc:
        raise DbtRuntimeError(str(exc)) from exc


_UNQUOTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_seed_header(relation: BaseRelation, names: list[str], delimiter: str) -> None:
    """With ``quote_columns: false`` a seed's header must be plain identifiers. One that is not
    is nearly always a header split with the wrong ``delimiter`` (one column named
    ``id|name|...``), which would otherwise load silently as a single wide column."""
    for name in names:
        if _UNQUOTED_IDENTIFIER.fullmatch(name):
            continue
        found = [d for d in ("|", ";", "\t", ",") if d != delimiter and d in name]
        hint = (f"the header looks {found[0]!r}-delimited: set delimiter: '{found[0]}' in the "
                "seed's config" if found else "check the seed's delimiter")
        raise DbtRuntimeError(
            f"Syntax error in seed {relation}: column name {name!r} is not a valid unquoted "
            f"identifier (quote_columns is false; the header was split on {delimiter!r}). "
            f"{hint.capitalize()}, or set quote_columns: true to keep such names.")


def _seed_text(value: Any) -> str | None:
    import datetime as dt
    from decimal import Decimal

    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        text = format(value, "f")
        return text
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)


def _type_name(column: Any) -> str:
    try:
        return spark_type(column).simpleString()
    except DuckLakeError:
        return column.column_type


def _catalog_row(schema: str, name: str, kind: str, comment: str | None, column: str | None,
                 index: int | None, column_type: str | None, column_comment: str | None,
                 stats: Any) -> list[Any]:
    has_stats = stats is not None
    rows, size = stats if has_stats else (None, None)
    return [schema, name, kind, comment, None, column, index, column_type, column_comment,
            "Row count", rows, "Live rows at the latest snapshot (DuckLake metadata)", has_stats,
            "Size", size, "Bytes of live Parquet data files", has_stats]
