"""Python models: the model's code run in this process's SparkSession (submission method
``session``), reading lake relations through the temp-view registry and writing its table in
one snapshot."""

from __future__ import annotations

from typing import Any

from dbt.adapters.base.relation import BaseRelation
from dbt_common.exceptions import DbtRuntimeError

from .lake.errors import DuckLakeError
from .relation import lake_name
from .runtime import Runtime, check_writable


def submit(runtime: Runtime, relation: BaseRelation, parsed_model: dict,
           compiled_code: str) -> Any:
    """Run a Python model's code with ``spark`` and the ``ducklake_*`` helpers the model's
    template calls; its ``ducklake_write`` replaces (or creates) the model's table."""
    # Refused before the model's code runs: it holds `spark` and could write files itself.
    check_writable(runtime, f"the Python model {parsed_model.get('unique_id', relation)}")
    config = parsed_model.get("config", {})
    result: dict[str, Any] = {}

    def load(name: str) -> Any:
        return runtime.registry.run_with_views(lambda: runtime.spark.table(name))

    def write(df: Any) -> None:
        from pyspark.sql import DataFrame

        from .spark.lake import LakeTable
        from .table_settings import sorted_by_of, table_options_of

        if not isinstance(df, DataFrame):
            # pandas-on-Spark frames convert themselves; pandas frames go through Arrow
            df = df.to_spark() if hasattr(df, "to_spark") else \
                runtime.spark.createDataFrame(df)
        name = schema, identifier = lake_name(relation)
        info = runtime.engine.commit_info("PYTHON MODEL")
        if not runtime.lake.catalog.schemas() or schema not in [
                s.schema_name for s in runtime.lake.catalog.schemas()]:
            runtime.lake.create_schema(schema, if_not_exists=True, info=info)
        raw = config.get("partition_by") or config.get("partitioned_by") or []
        partition_by = [raw] if isinstance(raw, str) else list(raw)
        node = str(parsed_model.get("unique_id", relation))
        options, sorted_by = table_options_of(config, node), sorted_by_of(config, node)
        if f"{schema}.{identifier}" in runtime.lake.tables(schema):
            LakeTable(runtime.lake, schema, identifier, table_options=options,
                      sorted_by=sorted_by).replace(df, info=info, partition_by=partition_by)
        else:  # a view of that name is dropped in the table's snapshot
            runtime.lake.create_table(name, df, or_replace=True, info=info,
                                      partition_by=partition_by, table_options=options,
                                      sorted_by=sorted_by)
        runtime.registry.lake_changed()
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

