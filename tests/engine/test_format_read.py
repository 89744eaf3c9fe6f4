"""``spark.read.format("ducklake")``: a batch read through the Python data source, time
travel, file skipping from pushed filters, and ``errorifexists`` writes. DuckDB reads the
same lake as the oracle."""

from __future__ import annotations

import pyarrow as pa
import pytest
from oracle import assert_same, spark_rows
from pyspark.sql.datasource import GreaterThanOrEqual, LessThan
from spies import scanned_rows

from dbt.adapters.ducklake.spark.datasource import LakeFilteringReader, ReadOptions
from dbt.adapters.ducklake.spark.datasource.reader import FilesPartition, InlinedPartition

pytestmark = pytest.mark.spark


def reader(spark, lake_target, table: str, **options: str):  # noqa: ANN001, ANN201
    r = spark.read.format("ducklake").option("catalog", lake_target.catalog)
    if lake_target.metadata_schema:
        r = r.option("metadata_schema", lake_target.metadata_schema)
    for key, value in options.items():
        r = r.option(key, value)
    return r


def options(lake_target, table: str, **extra: str) -> dict[str, str]:  # noqa: ANN001
    out = {"catalog": lake_target.catalog, "table": table, **extra}
    if lake_target.metadata_schema:
        out["metadata_schema"] = lake_target.metadata_schema
    return out


def test_read_equals_duckdb_with_deletes_updates_inlined_and_evolution(  # noqa: ANN001
        spark, lake, lake_target, duck):
    table = lake.create_table("main.r", spark.range(0, 300, numPartitions=3).selectExpr(
        "id", "concat('v', id) AS label", "CAST(id AS DOUBLE) / 3 AS x"))
    table.append(pa.table({"id": pa.array([1000, 1001], pa.int64()), "label": ["a", "b"],
                           "x": [0.5, None]}))  # inlined
    table.delete("id % 7 = 0 OR id = 1001")
    table.update({"label": "'updated'"}, "id BETWEEN 10 AND 12")
    duck.execute("ALTER TABLE lake.r ADD COLUMN extra INTEGER DEFAULT 7")
    duck.execute("INSERT INTO lake.r VALUES (2000, 'duck', 1.5, 8)")
    df = reader(spark, lake_target, "main.r").load("main.r")
    assert df.columns == ["id", "label", "x", "extra"]
    assert_same(duck, "r", df)
    assert spark_rows(df) == spark_rows(table.read())
    # Spark applies the filter to the rows of the files it keeps
    assert sorted(r[0] for r in df.where("id >= 295").select("id").collect()) == [
        295, 296, 297, 298, 299, 1000, 2000]


def test_time_travel_by_snapshot_and_timestamp(spark, lake, lake_target, duck):  # noqa: ANN001
    table = lake.create_table("main.tt", spark.range(0, 5).selectExpr("id"))
    first = lake.current_snapshot()
    table.append(spark.range(5, 8).selectExpr("id"))
    table.delete("id < 2")
    at_first = reader(spark, lake_target, "main.tt", snapshot=str(first.snapshot_id)).load(
        "main.tt")
    assert sorted(r[0] for r in at_first.collect()) == [0, 1, 2, 3, 4]
    assert_same(duck, "tt", at_first, at=first.snapshot_id)
    stamp = first.snapshot_time.isoformat()
    by_time = reader(spark, lake_target, "main.tt", timestamp=stamp).load("main.tt")
    assert sorted(r[0] for r in by_time.collect()) == [0, 1, 2, 3, 4]
    latest = reader(spark, lake_target, "main.tt").load("main.tt")
    assert sorted(r[0] for r in latest.collect()) == [2, 3, 4, 5, 6, 7]


def test_pushed_filters_skip_files(spark, lake, lake_target):  # noqa: ANN001
    table = lake.create_table("main.sk", spark.range(0, 100, numPartitions=1).selectExpr("id"))
    for start in (100, 200, 300):
        table.append(spark.range(start, start + 100, numPartitions=1).selectExpr("id"))
    table.append(pa.table({"id": pa.array([5000], pa.int64())}))  # inlined: never skipped
    schema = table.schema()

    def planned(*filters):  # noqa: ANN002, ANN202
        r = LakeFilteringReader(ReadOptions.parse(options(lake_target, "main.sk")), schema)
        assert list(r.pushFilters(list(filters))) == list(filters)  # Spark filters rows
        parts = r.partitions()
        files = [f for p in parts if isinstance(p, FilesPartition) for f in p.files]
        return len(files), sum(isinstance(p, InlinedPartition) for p in parts)

    assert planned() == (4, 1)
    assert planned(GreaterThanOrEqual(("id",), 250)) == (2, 1)
    assert planned(GreaterThanOrEqual(("id",), 150), LessThan(("ID",), 180)) == (1, 1)
    df = reader(spark, lake_target, "main.sk").load("main.sk").where("id >= 250")
    assert sorted(r[0] for r in df.collect()) == [*range(250, 400), 5000]
    # through Spark too: its pushdown worker plans the read, and the scan reads the two files
    # kept and the inlined row, not the 401 rows
    assert scanned_rows(df) == [201]
    assert scanned_rows(reader(spark, lake_target, "main.sk").load("main.sk")) == [401]


def test_bad_read_input_is_a_clear_error(spark, lake, lake_target):  # noqa: ANN001
    with pytest.raises(Exception, match=r"cannot read main\.nope: .*Check the table option"):
        reader(spark, lake_target, "main.nope").load("main.nope").collect()
    lake.create_table("main.ok", spark.range(0, 2).selectExpr("id"))
    with pytest.raises(Exception, match="either the snapshot or the timestamp"):
        reader(spark, lake_target, "main.ok", snapshot="1",
               timestamp="2020-01-01").load("main.ok").collect()
    with pytest.raises(Exception, match="option snapshot must be an integer"):
        reader(spark, lake_target, "main.ok", snapshot="x").load("main.ok").collect()


def test_write_errorifexists_is_refused_by_spark(spark, lake, lake_target):  # noqa: ANN001
    """Spark itself refuses every save mode but append and overwrite for a Python data
    source (UNSUPPORTED_DATA_SOURCE_SAVE_MODE), before the source sees the write: the table
    is left as it was. errorifexists is the default, so a write must name its mode."""
    lake.create_table("main.e", spark.range(0).selectExpr("id"))
    before = lake.snapshots()
    writer = spark.range(3).write.format("ducklake").option("catalog", lake_target.catalog)
    if lake_target.metadata_schema:
        writer = writer.option("metadata_schema", lake_target.metadata_schema)
    with pytest.raises(Exception, match="cannot be written in the \"ErrorIfExists\" mode"):
        writer.save("main.e")  # errorifexists is the default mode
    with pytest.raises(Exception, match="cannot be written in the \"Ignore\" mode"):
        writer.mode("ignore").save("main.e")
    assert lake.snapshots() == before
