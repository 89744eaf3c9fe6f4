"""``spark.readStream.format("ducklake")``: each inserted row once (across a flush and a
merge of adjacent files, and a restart from the checkpoint), deletes failing or skipped, the
change feed equal to DuckDB's ``table_changes``. DuckDB reads the same lake as the oracle."""

from __future__ import annotations

import pyarrow as pa
import pytest
from oracle import duck_rows, rows

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]


def source(spark, lake_target, table: str, **options: str):  # noqa: ANN001, ANN201
    r = spark.readStream.format("ducklake").option("catalog", lake_target.catalog) \
        .option("table", table)
    if lake_target.metadata_schema:
        r = r.option("metadata_schema", lake_target.metadata_schema)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def drain(df, out: str, checkpoint: str) -> list[int]:  # noqa: ANN001
    """Run the stream into a Parquet sink until the source is drained; the batch ids."""
    query = (df.writeStream.format("parquet").option("path", out)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    return [p["batchId"] for p in query.recentProgress if p["numInputRows"]]


def emitted(spark, out: str) -> list[tuple]:  # noqa: ANN001
    return rows(spark.read.parquet(out).toArrow().to_pylist())


def batch(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "label": [f"r{i}" for i in ids]})


@pytest.mark.postgres_too
def test_each_inserted_row_once_across_flush_merge_and_restart(  # noqa: ANN001
        spark, lake, lake_target, duck, tmp_path):
    table = lake.create_table("main.s", spark.range(0, 4).selectExpr(
        "id", "concat('r', id) AS label"))
    table.append(batch(100, 3))  # inlined
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    stream = source(spark, lake_target, "main.s", maxSnapshotsPerTrigger="2")
    drain(stream, out, ck)  # the table's rows at the start
    assert emitted(spark, out) == duck_rows(duck, "SELECT * FROM lake.s")

    for start in (200, 210, 220):
        table.append(batch(start, 3))  # inlined, already seen by no one
    table.flush_inlined_data()  # rewrites rows emitted (100..102) and not yet (200..222)
    for start in (300, 400):
        table.append(spark.range(start, start + 40, numPartitions=1).selectExpr(
            "id", "concat('r', id) AS label"))
    table.merge_adjacent_files()
    table.append(batch(500, 2))

    batches = drain(stream, out, ck)  # restarted from the checkpoint
    assert len(batches) >= 2  # two snapshots per trigger
    got = emitted(spark, out)
    assert got == duck_rows(duck, "SELECT * FROM lake.s")
    assert len(got) == len({r[0] for r in got}) == 4 + 3 + 9 + 80 + 2


def test_deletes_fail_the_stream_unless_skipped(spark, lake, lake_target, tmp_path):  # noqa: ANN001
    table = lake.create_table("main.d", spark.range(0).selectExpr(
        "id", "'' AS label"))
    start = lake.current_snapshot().snapshot_id + 1
    table.append(batch(0, 3))
    table.update({"label": "'changed'"}, "id = 1")
    table.append(batch(10, 2))
    stream = source(spark, lake_target, "main.d", startingSnapshot=str(start))
    with pytest.raises(Exception, match=r"deleted or updated rows of main\.d.*skipChangeCommits"):
        drain(stream, str(tmp_path / "o1"), str(tmp_path / "c1"))
    skipping = source(spark, lake_target, "main.d", startingSnapshot=str(start),
                      skipChangeCommits="true")
    drain(skipping, str(tmp_path / "o2"), str(tmp_path / "c2"))
    # the update's commit is skipped whole: its new row version is not emitted
    assert emitted(spark, str(tmp_path / "o2")) == rows(
        [(0, "r0"), (1, "r1"), (2, "r2"), (10, "r10"), (11, "r11")])
    latest = source(spark, lake_target, "main.d", startingSnapshot="latest")
    assert not drain(latest, str(tmp_path / "o3"), str(tmp_path / "c3"))  # nothing new
    table.append(batch(20, 1))
    assert drain(latest, str(tmp_path / "o3"), str(tmp_path / "c3"))
    assert emitted(spark, str(tmp_path / "o3")) == rows([(20, "r20")])


@pytest.mark.postgres_too
def test_change_feed_equals_duckdb_table_changes(spark, lake, lake_target, duck, tmp_path):  # noqa: ANN001
    table = lake.create_table("main.c", spark.range(0, 30, numPartitions=1).selectExpr(
        "id", "concat('r', id) AS label"))
    first = lake.current_snapshot().snapshot_id
    table.append(batch(100, 3))
    table.update({"label": "'u'"}, "id IN (1, 101)")
    table.delete("id IN (2, 102)")
    table.flush_inlined_data()
    table.append(batch(200, 2))
    stream = source(spark, lake_target, "main.c", startingSnapshot=str(first + 1),
                    readChangeFeed="true", maxSnapshotsPerTrigger="1")
    assert stream.columns == ["change_type", "snapshot_id", "rowid", "id", "label"]
    out = str(tmp_path / "out")
    drain(stream, out, str(tmp_path / "ck"))
    last = lake.current_snapshot().snapshot_id
    expected = duck_rows(duck, "SELECT change_type, snapshot_id, rowid, id, label FROM "
                         f"ducklake_table_changes('lake', 'main', 'c', {first + 1}, {last})")
    assert emitted(spark, out) == expected
    assert {r[0] for r in expected} == {"insert", "delete", "update_preimage",
                                        "update_postimage"}


def test_bad_source_input_is_a_clear_error(spark, lake, lake_target, tmp_path):  # noqa: ANN001
    with pytest.raises(Exception, match=r"cannot read main\.nope"):
        source(spark, lake_target, "main.nope")
    lake.create_table("main.b", spark.range(0).selectExpr("id"))
    with pytest.raises(Exception, match="startingSnapshot 99999 is after"):
        drain(source(spark, lake_target, "main.b", startingSnapshot="99999"),
              str(tmp_path / "o"), str(tmp_path / "c"))
    with pytest.raises(Exception, match="maxSnapshotsPerTrigger must be an integer >= 1"):
        source(spark, lake_target, "main.b", maxSnapshotsPerTrigger="0")
