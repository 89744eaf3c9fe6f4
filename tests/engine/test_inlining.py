"""The inlining limit: table > schema > global lake options, then the connection setting."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import types as T

from dbt.adapters.ducklake.lake.options import inlining_row_limit, store_option
from dbt.adapters.ducklake.spark import SparkLake

pytestmark = pytest.mark.spark

SCHEMA = T.StructType([T.StructField("id", T.LongType()), T.StructField("s", T.StringType())])


def parquet_files(path: str) -> int:
    return sum(f.endswith(".parquet") for _, _, fs in os.walk(path) for f in fs)


def rows(spark, n: int):  # noqa: ANN001, ANN201
    return spark.createDataFrame([(i, f"r{i}") for i in range(n)], SCHEMA)


def test_limit_scoping(spark, lake, lake_target):  # noqa: ANN001
    lake.create_schema("s")
    t = lake.create_table("s.t", SCHEMA)
    u = lake.create_table("main.u", SCHEMA)
    catalog = lake.catalog
    t_id, s_id = t.info().table_id, catalog.schema("s").schema_id

    t.append(rows(spark, 10))  # default limit 10: inlined
    assert lake.current_snapshot().changes == [f"inlined_insert:{t_id}"]
    t.append(rows(spark, 11))  # 11 rows: Parquet
    assert lake.current_snapshot().changes == [f"inserted_into_table:{t_id}"]

    store_option(catalog, "data_inlining_row_limit", 0)  # global off
    u.append(rows(spark, 3))
    assert lake.current_snapshot().changes[0].startswith("inserted_into_table:")
    store_option(catalog, "data_inlining_row_limit", 5, schema_id=s_id)  # schema wins
    t.append(rows(spark, 5))
    assert lake.current_snapshot().changes == [f"inlined_insert:{t_id}"]
    store_option(catalog, "data_inlining_row_limit", 50, table_id=t_id)  # table wins
    t.append(rows(spark, 40))
    assert lake.current_snapshot().changes == [f"inlined_insert:{t_id}"]
    files = parquet_files(lake_target.data_path)
    t.delete("id < 30")  # 30 + ... rows from inlined and Parquet; within 50: no new file
    assert parquet_files(lake_target.data_path) == files
    with catalog.read() as conn:
        assert inlining_row_limit(catalog, conn, s_id, t_id) == 50
        assert inlining_row_limit(catalog, conn, s_id, None) == 5
        assert inlining_row_limit(catalog, conn, None, None) == 0


def test_connection_setting_applies_when_the_lake_sets_none(spark, lake_target):  # noqa: ANN001
    lake = SparkLake.open(spark, lake_target.catalog, lake_target.data_path,
                          data_inlining_row_limit=0, **lake_target.open_kwargs())
    t = lake.create_table("main.t", SCHEMA)
    t.append(rows(spark, 2))
    assert lake.current_snapshot().changes == [f"inserted_into_table:{t.info().table_id}"]
    lake.close()


def test_arrow_batches_inline_without_spark_and_read_as_duckdb_reads(spark, lake, duck):  # noqa: ANN001
    """A pyarrow Table within the limit is inlined on the driver (the streaming path); a
    larger one is written by Spark; names match case-insensitively and types are checked."""
    import datetime as dt

    import pyarrow as pa

    from dbt.adapters.ducklake.lake.errors import SchemaMismatchError

    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("ts",
                           T.TimestampNTZType()), T.StructField("x", T.DoubleType()),
                           T.StructField("s", T.StringType())])
    t = lake.create_table("main.t", schema)
    table_id = t.info().table_id
    small = pa.table({"ID": pa.array([1, 2], pa.int32()),  # int32 widens to int64
                      "ts": pa.array([dt.datetime(2026, 1, 1, 12), None], pa.timestamp("us")),
                      "x": [0.5, None], "s": ["a", None]})
    t.append(small)
    assert lake.current_snapshot().changes == [f"inlined_insert:{table_id}"]
    big = pa.table({"id": list(range(10, 25)), "ts": [dt.datetime(2026, 1, 2)] * 15,
                    "x": [1.0] * 15, "s": ["b"] * 15})
    t.append(big)
    assert lake.current_snapshot().changes == [f"inserted_into_table:{table_id}"]
    assert duck.execute("SELECT id, ts, x, s FROM lake.main.t WHERE id < 10 ORDER BY id"
                        ).fetchall() == [(1, dt.datetime(2026, 1, 1, 12), 0.5, "a"),
                                         (2, None, None, None)]
    assert duck.execute("SELECT count(*) FROM lake.main.t").fetchone() == (17,)
    assert sorted(r.id for r in t.read().collect()) == [1, 2, *range(10, 25)]
    with pytest.raises(SchemaMismatchError, match="missing"):
        t.append(pa.table({"id": [3]}))
    with pytest.raises(SchemaMismatchError, match="does not widen"):
        t.append(small.set_column(1, "ts", pa.array(["x", "y"])))
