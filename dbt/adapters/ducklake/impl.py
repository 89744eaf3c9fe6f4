"""The ducklake adapter: a thin dbt surface over the lake client and the statement engine.

Listing relations and columns reads the DuckLake catalog directly (one query per schema);
everything that changes data goes through SQL statements the engine carries out, or through
the few ``@available`` methods macros call (seeds, Python models, docs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dbt.adapters.base import AdapterConfig, available
from dbt.adapters.base.impl import ConstraintSupport
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.capability import Capability, CapabilityDict, CapabilitySupport, Support
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.sql import SQLAdapter
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.exceptions import DbtRuntimeError

from . import docs, python_models, seeds
from .column import DuckLakeColumn, type_name
from .connections import DuckLakeConnectionManager
from .lake.errors import DuckLakeError, NotFoundError
from .relation import DuckLakeRelation, lake_name
from .runtime import Runtime, check_not_branched, check_writable, start_spark_early
from .sql.names import LakeName

if TYPE_CHECKING:
    import agate

logger = AdapterLogger("DuckLake")


class DuckLakeConfig(AdapterConfig):
    file_format: str | None = None  # validated: DuckLake tables are Parquet
    # table maintenance run after the model commits, e.g. ['flush_inlined_data']
    post_commit_maintenance: list[Any] | None = None
    # dbt clone: 'current' (default), 'state' or a snapshot id (see clone.py)
    clone_snapshot: Any = None
    # Spark SQL settings for this model's statements only (restored after it)
    spark_conf: dict[str, Any] | None = None
    # grants: a lake has no per-table privileges; 'error' (default) or 'warn'
    on_grants: str | None = None
    # the table's own lake options, set with its writes (table_settings.py); tblproperties
    # is dbt-spark's name for them
    table_options: dict[str, Any] | None = None
    tblproperties: dict[str, Any] | None = None
    # the table's sort order (DuckDB's SET SORTED BY), e.g. ['id', 'ts desc']
    sorted_by: Any = None


class DuckLakeAdapter(SQLAdapter):
    ConnectionManager = DuckLakeConnectionManager
    Relation = DuckLakeRelation
    Column = DuckLakeColumn
    AdapterSpecificConfigs = DuckLakeConfig

    CONSTRAINT_SUPPORT = {
        # check, unique and primary_key: over the rows a write leaves, before its commit
        # (contract.py); not_null: a column property set and checked with the data
        ConstraintType.check: ConstraintSupport.ENFORCED,
        ConstraintType.not_null: ConstraintSupport.ENFORCED,
        ConstraintType.unique: ConstraintSupport.ENFORCED,
        ConstraintType.primary_key: ConstraintSupport.ENFORCED,
        ConstraintType.foreign_key: ConstraintSupport.NOT_ENFORCED,
    }

    _capabilities = CapabilityDict({
        Capability.TableLastModifiedMetadata: CapabilitySupport(support=Support.Full),
    })

    def __init__(self, config: Any, mp_context: Any) -> None:
        super().__init__(config, mp_context)
        start_spark_early(config.credentials)  # while dbt parses the project

    # ------------------------------------------------------------------ basics
    @classmethod
    def date_function(cls) -> str:
        return "current_timestamp()"

    @classmethod
    def is_cancelable(cls) -> bool:
        return False

    @classmethod
    def quote(cls, identifier: str) -> str:
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
        from .runtime import check_data_path

        runtime = self.runtime()
        runtime.lake.catalog.latest_snapshot()
        check_data_path(runtime.lake.catalog.data_path)
        self.execute("select 1 as id")

    def valid_incremental_strategies(self) -> list[str]:
        return ["merge", "append", "delete+insert", "insert_overwrite", "microbatch"]

    # ------------------------------------------------------------------ runtime
    def runtime(self) -> Runtime:
        """The shared Spark/lake runtime; also marks which dbt node this thread commits for."""
        from .runtime import set_current_node

        connection = self.connections.get_thread_connection()
        connection = self.connections.open(connection)
        set_current_node(connection.name)
        return connection.handle.runtime

    # ------------------------------------------------------------------ around a model
    def pre_model_hook(self, config: Any) -> Any:
        """Refuse ``grants`` (unless ``on_grants: warn``) before anything is built, and apply
        the model's ``spark_conf`` to the shared session for its statements only: such a
        model runs alone (:mod:`.model_settings`)."""
        from . import model_settings

        node = self.connections.get_thread_connection().name or "this model"
        model_settings.check_grants(config.get("grants"), config.get("on_grants"), node)
        conf = model_settings.spark_conf_of(config)
        runtime = self.runtime()
        return runtime, model_settings.enter(runtime.spark, runtime.model_lock, conf, node)

    def post_model_hook(self, config: Any, context: Any) -> None:
        """Put the settings ``pre_model_hook`` changed back, and let other models run."""
        from . import model_settings

        if context is not None:
            runtime, settings = context
            try:
                self._ducklake_forget_constraints(runtime)
            finally:  # whatever happened, the other models must not wait forever
                model_settings.leave(runtime.spark, runtime.model_lock, settings)

    @available
    def ducklake_expect_table_settings(self, relation: BaseRelation, config: Any) -> str:
        """Have this model's writes to ``relation`` write files by its ``table_options`` and
        in its ``sorted_by`` order, and set both with their commits (:mod:`.table_settings`),
        until the model ends."""
        from .table_settings import sorted_by_of, table_options_of

        runtime = self.runtime()
        node = self.connections.get_thread_connection().name or "this model"
        name = LakeName(*lake_name(relation))
        options = table_options_of(config, node)
        sorted_by = sorted_by_of(config, node)
        runtime.engine.expect_table_options(name, options)
        runtime.engine.expect_sorted_by(name, sorted_by)
        if options or sorted_by is not None:
            self._ducklake_constrained[node] = name
        return ""

    @available
    def ducklake_expect_constraints(self, relation: BaseRelation, model: Any) -> str:
        """Check every write of this model to ``relation`` against its contract's CHECK,
        PRIMARY KEY and UNIQUE constraints (:mod:`.contract`), until the model ends
        (``post_model_hook``); ``model=None`` stops the checks now."""
        from .contract import table_constraints
        from .spark.constraints import NO_CONSTRAINTS

        runtime = self.runtime()
        node = self.connections.get_thread_connection().name or "this model"
        name = LakeName(*lake_name(relation))
        constraints = NO_CONSTRAINTS if model is None else table_constraints(model, node)
        runtime.engine.expect_constraints(name, constraints)
        if constraints:
            self._ducklake_constrained[node] = name
        return ""

    def _ducklake_forget_constraints(self, runtime: Runtime) -> None:
        """Stop the checks and table options this thread's model asked for, whether or not
        its write ran."""
        from .spark.constraints import NO_CONSTRAINTS

        node = self.connections.get_thread_connection().name or "this model"
        name = self._ducklake_constrained.pop(node, None)
        if name is not None:
            runtime.engine.expect_constraints(name, NO_CONSTRAINTS)
            runtime.engine.expect_table_options(name, {})
            runtime.engine.expect_sorted_by(name, None)

    @property
    def _ducklake_constrained(self) -> dict[str, LakeName]:
        """dbt node -> the relation its constraints and table options are expected on."""
        found: dict[str, LakeName] | None = self.__dict__.get("_ducklake_constrained_map")
        if found is None:
            found = self.__dict__.setdefault("_ducklake_constrained_map", {})
        return found

    @available
    def ducklake_check_grants(self, grant_config: Any, on_grants: Any, node: str) -> None:
        """dbt's ``apply_grants`` on a lake: an error, or with ``on_grants: warn`` a warning
        (nothing is granted or revoked: a lake has no per-table privileges)."""
        from . import model_settings

        model_settings.check_grants(grant_config, on_grants, node, warn=logger.warning)

    # ------------------------------------------------------------------ listing
    def lake_database(self, database: str | None) -> str | None:
        """A relation's database argument, as relations carry it (none): a lake is one
        database. ``None``, empty (what ``target.database`` renders without a lake name) or the
        profile's lake name are accepted; another name is refused rather than read from this
        lake under the same ``schema.table``."""
        name = self.config.credentials.lake_name
        if database is None or str(database) == "" or (
                name and str(database).lower() == name.lower()):
            return None
        raise DbtRuntimeError(
            f"database {database!r} is not this lake: a ducklake target is one database"
            + (f" (named {name!r} by the profile)" if name else "")
            + " and relations are named schema.table. Accepted: none, target.database"
            + (f" ({name!r})" if name else " (empty without a `database`/`lake` profile key)"))

    @available.parse_none
    def get_relation(self, database: str, schema: str,
                     identifier: str) -> BaseRelation | None:
        return super().get_relation(self.lake_database(database), schema,
                                    identifier)

    def list_relations(self, database: str | None, schema: str) -> list[BaseRelation]:
        return super().list_relations(self.lake_database(database), schema)

    @available
    def ducklake_tables_by_pattern_sql(self, schema_pattern: str, table_pattern: str,
                                       exclude: str = "", database: str | None = None) -> str:
        """dbt_utils' ``get_tables_by_pattern_sql`` for a lake: the relations whose schema and
        name match the SQL ``ilike`` patterns (and whose name does not match ``exclude``), as
        a query of ``table_schema``, ``table_name``, ``table_type`` ('table' or 'view')."""
        import re

        from .spark.expressions import string

        self.lake_database(database)

        def like(pattern: str) -> re.Pattern[str]:
            parts = [".*" if c == "%" else "." if c == "_" else re.escape(c)
                     for c in str(pattern)]
            return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)

        schemas, tables, excluded = like(schema_pattern), like(table_pattern), like(exclude)
        lake = self.runtime().lake.catalog
        rows = [(s.schema_name, name, kind) for s in lake.schemas()
                if schemas.fullmatch(s.schema_name)
                for kind, name in lake.relations(s.schema_name)
                if tables.fullmatch(name) and not excluded.fullmatch(name)]
        if not rows:
            return ("select cast(null as string) as table_schema, cast(null as string) as "
                    "table_name, cast(null as string) as table_type where false")
        values = ", ".join(f"({string(s)}, {string(n)}, {string(k)})" for s, n, k in
                           sorted(rows))
        return f"select * from values {values} as t(table_schema, table_name, table_type)"

    def list_schemas(self, database: str) -> list[str]:
        return [s.schema_name for s in self.runtime().lake.catalog.schemas()]

    def check_schema_exists(self, database: str, schema: str) -> bool:
        return schema in self.list_schemas(database)

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        database = self.lake_database(schema_relation.database)
        lake = self.runtime().lake.catalog
        out: list[BaseRelation] = []
        if schema_relation.schema is None:  # no schema: nothing to list
            return out
        for kind, name in lake.relations(schema_relation.schema):
            out.append(self.Relation.create(
                database=database, schema=schema_relation.schema,
                identifier=name,
                type=RelationType.View if kind == "view" else RelationType.Table,
            ))
        # the lake's SQL functions (dbt's `functions/`), unless a table or view has the name
        taken = {r.identifier.lower() for r in out if r.identifier}
        for function in self.runtime().lake.functions(schema_relation.schema):
            if function.macro_name.lower() not in taken:
                out.append(self.Relation.create(
                    database=database, schema=schema_relation.schema,
                    identifier=function.macro_name, type=RelationType.Function))
        return out

    def get_columns_in_relation(self, relation: BaseRelation) -> list[DuckLakeColumn]:
        runtime = self.runtime()
        if relation.schema and relation.identifier:
            lake = runtime.lake.catalog
            try:
                with lake.read() as conn:
                    at = runtime.registry.pinned_version
                    table = lake.table(relation.schema, relation.identifier, at, conn)
                    columns = lake.columns(table.table_id, at, conn)
                return [DuckLakeColumn(c.column_name, type_name(c)) for c in columns]
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
        runtime = self.runtime()
        check_writable(runtime, f"the seed {relation}")
        types: dict[str, str] = {}
        for i, name in enumerate(agate_table.column_names):
            spark_type = column_types.get(name) or self.convert_agate_type(agate_table, i)
            if spark_type is None:  # an agate type dbt has no conversion for
                raise DbtRuntimeError(f"the seed {relation}: column {name!r} has no type; "
                                      "set it in the seed's column_types")
            types[name] = spark_type
        return seeds.load_seed(runtime, relation, agate_table, types, full_refresh, self.quote,
                               quote_columns, delimiter)

    @available
    def ducklake_replace_table(self, relation: BaseRelation, sql: str, not_null: list[str],
                               sql_header: str | None = None,
                               partition_by: list[str] | None = None) -> str:
        """CREATE OR REPLACE TABLE with NOT NULL columns checked before the one commit."""
        runtime = self.runtime()
        check_writable(runtime, f"building the table {relation}")
        engine = runtime.engine
        if sql_header:
            engine.execute(sql_header)
        df = runtime.registry.run_with_views(runtime.spark.sql, sql)
        name = LakeName(*lake_name(relation))
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

        from .runtime import WATERMARKS_KEY, set_watermark

        runtime = self.runtime()
        if runtime.branch is not None:
            raise DbtRuntimeError(
                f"{node_id} reads the change feed of {relation} since its last run "
                "(ducklake_changes_window), which atomic invocations do not support yet: its "
                "watermark would name a snapshot of the branch, not of the lake. Build it "
                "with DUCKLAKE_PUBLISH=per_model")
        lake = runtime.lake.catalog
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
            table = self.runtime().lake.table(lake_name(relation))
        except NotFoundError:
            return []
        return table.partitioning()

    # ------------------------------------------------------------------ dbt clone
    @available
    def ducklake_clone_pin(self, setting: Any) -> dict[str, Any] | None:
        """The snapshot a `dbt clone` view reads for the ``clone_snapshot`` setting, as
        ``{"snapshot_id": .., "reason": ..}``; ``None`` for the relation as it is now."""
        from . import clone

        parsed = clone.parse_setting(setting)
        if parsed is None:
            return None
        found = clone.pin(self.runtime(), parsed)
        return {"snapshot_id": found.snapshot_id, "reason": found.reason}

    # ------------------------------------------------------------------ maintenance
    @available
    def ducklake_maintenance(self, operation: str,
                             arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a lake maintenance operation (flush, merge, rewrite, expire, cleanup, orphans,
        checkpoint); returns its result as a dict with a ``summary`` line."""
        from . import maintenance

        runtime = self.runtime()
        check_writable(runtime, f"the maintenance operation {operation}")
        check_not_branched(runtime, f"the maintenance operation {operation}")
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
        check_writable(runtime, f"post_commit_maintenance of {relation}")
        if runtime.branch is not None:
            logger.warning(f"post_commit_maintenance of {relation} is skipped in an atomic "
                           "invocation (publish: atomic): the model's rows are staged, not yet "
                           "in the lake; run the maintenance after the publish")
            return []
        try:
            results = maintenance.post_commit(runtime.lake, *lake_name(relation), operations)
        except DuckLakeError as exc:
            raise DbtRuntimeError(str(exc)) from exc
        runtime.registry.invalidate()
        return results

    @available
    def ducklake_set_option(self, option: str, value: Any, schema: str | None = None,
                            table: str | None = None) -> str:
        """Set a lake option globally, for a schema, or for a table (no snapshot)."""
        runtime = self.runtime()
        check_writable(runtime, f"ducklake_set_option ({option})")
        check_not_branched(runtime, f"ducklake_set_option ({option})")
        try:
            setting = runtime.lake.set_option(option, value, schema, table)
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
        check_writable(runtime, f"persist_docs on {relation}")
        docs.persist_docs(runtime, relation, description, columns)

    # ------------------------------------------------------------------ docs
    @available
    def ducklake_catalog(self, schemas: list[str]) -> agate.Table:
        """Rows of ``dbt docs generate``'s catalog, from DuckLake metadata and statistics."""
        return docs.catalog(self.runtime(), schemas)

    def get_catalog_for_single_relation(self, relation: BaseRelation) -> Any:
        """Table and column metadata of one relation, from the same rows as the docs catalog."""
        return docs.catalog_table(self.runtime(), relation)

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
        return docs.last_modified(self.runtime(), relations)

    # ------------------------------------------------------------------ python models
    @available.parse_none
    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> Any:
        relation = self.Relation.create(schema=parsed_model["schema"],
                                        identifier=parsed_model["alias"])
        return python_models.submit(self.runtime(), relation, parsed_model, compiled_code)

    def generate_python_submission_response(self, submission_result: Any) -> Any:
        return submission_result

    @property
    def default_python_submission_method(self) -> str:
        return "session"

    @property
    def python_submission_helpers(self) -> dict[str, Any]:
        return {}
