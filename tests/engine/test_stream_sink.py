"""``format("ducklake")`` writes: the streaming sink (exactly once), ``foreachBatch`` calls
with a stream id and batch id, and batch ``df.write``. DuckDB reads every result."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest
from oracle import assert_same
from reliability.support import leftovers
from stream_support import feed, ids, marks

from dbt.adapters.ducklake.lake import Transaction, data_files
from dbt.adapters.ducklake.lake.models import TableRef
from dbt.adapters.ducklake.lake.streams import StreamBatch, StreamCheckpointError
from dbt.adapters.ducklake.spark.merge import MergeClause

pytestmark = pytest.mark.spark

SCHEMA = "id long, label string"


def sink(spark, lake_target, src, checkpoint, table="main.ev", **options):  # noqa: ANN001, ANN201
    """A file-source stream (one file per batch) into the ducklake sink, not yet started."""
    writer = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
              .writeStream.format("ducklake").option("catalog", lake_target.catalog)
              .option("table", table).option("checkpointLocation", checkpoint))
    if lake_target.metadata_schema:
        writer = writer.option("metadata_schema", lake_target.metadata_schema)
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer.trigger(availableNow=True)


def run(writer) -> None:  # noqa: ANN001
    query = writer.start()
    query.awaitTermination()


def parquet_files(data_path: str) -> list[str]:
    return sorted(os.path.join(d, n) for d, _, names in os.walk(data_path) for n in names
                  if n.endswith(".parquet"))


def test_stream_commits_each_batch_once(spark, lake, lake_target, duck, tmp_path):  # noqa: ANN001
    table = lake.create_table("main.ev", spark.range(0).selectExpr("id", "'' AS label"))
    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    expected = feed(src, 0, 4) + feed(src, 1, 10) + feed(src, 2, 40)
    before = len(lake.snapshots())

    run(sink(spark, lake_target, src, ck))

    snapshots = lake.snapshots()[before:]
    assert [s.changes_made for s in snapshots] == [
        "inlined_insert:1", "inlined_insert:1", "inserted_into_table:1"]
    assert marks(lake)[before:] == [0, 1, 2]
    assert ids(table) == expected
    assert_same(duck, "ev", table.read())
    # the two inlined batches left no file; the 40 rows are one file, with exact stats
    assert len(parquet_files(lake_target.data_path)) == 1
    assert duck.execute("SELECT count(*), min(id), max(id) FROM lake.ev WHERE id >= 2000"
                        ).fetchone() == (40, 2000, 2039)

    # Spark crashed after our commit, before its commit log: it replays batch 2
    for name in ("2", ".2.crc"):
        os.remove(f"{ck}/commits/{name}")
    state = lake.snapshots()
    run(sink(spark, lake_target, src, ck))
    assert lake.snapshots() == state
    assert ids(table) == expected
    assert not leftovers(lake.catalog)  # the replay's file was removed

    # a new batch goes on from there
    expected += feed(src, 3, 3)
    run(sink(spark, lake_target, src, ck))
    assert marks(lake)[-1] == 3
    assert ids(table) == sorted(expected)

    # the checkpoint is lost: the stream would start again at batch 0
    shutil.rmtree(ck)
    state = lake.snapshots()
    with pytest.raises(Exception, match="already committed batch 3"):
        run(sink(spark, lake_target, src, ck))
    assert lake.snapshots() == state
    assert ids(table) == sorted(expected)
    assert not leftovers(lake.catalog)
    assert_same(duck, "ev", table.read())


def test_stream_id_option_and_complete_mode(spark, lake, lake_target, duck, tmp_path):  # noqa: ANN001
    table = lake.create_table("main.totals", spark.range(0).selectExpr(
        "'' AS label", "id AS n"))
    src = str(tmp_path / "src")
    feed(src, 0, 3)
    feed(src, 1, 2)
    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
              .selectExpr("CASE WHEN id >= 1000 THEN 'b' ELSE 'a' END AS label")
              .groupBy("label").count().withColumnRenamed("count", "n"))
    writer = (stream.writeStream.format("ducklake").outputMode("complete")
              .option("catalog", lake_target.catalog).option("table", "main.totals")
              .option("streamId", "totals-v1")
              .option("checkpointLocation", str(tmp_path / "ck"))
              .trigger(availableNow=True))
    if lake_target.metadata_schema:
        writer = writer.option("metadata_schema", lake_target.metadata_schema)
    run(writer)
    rows = sorted(tuple(r) for r in table.read().collect())
    assert rows == [("a", 3), ("b", 2)]
    assert_same(duck, "totals", table.read())
    last = lake.snapshots()[-1]
    assert '"id": "totals-v1"' in last.commit_extra_info
    # each batch replaced the table's contents: the first batch's row is gone
    assert last.changes_made == "inlined_insert:1,inlined_delete:1"


def test_foreach_batch_calls_are_idempotent(spark, lake, duck):  # noqa: ANN001
    events = lake.create_table("main.events", spark.range(0).selectExpr("id", "'' AS label"))
    copies = lake.create_table("main.copies", spark.range(0).selectExpr("id", "'' AS label"))

    def batch(start: int, count: int):  # noqa: ANN202
        return spark.range(start, start + count).selectExpr("id", "concat('row ', id) AS label")

    first = events.append(batch(0, 3), stream_id="s", batch_id=0)
    assert events.append(batch(0, 3), stream_id="s", batch_id=0) == first  # a replay
    # another table takes the same ids: marks are per table
    assert copies.append(batch(0, 3), stream_id="s", batch_id=0) is not None
    events.append(pa.table({"id": pa.array([10, 11], pa.int64()), "label": ["a", "b"]}),
                  stream_id="s", batch_id=1)
    count = len(lake.snapshots())
    with pytest.raises(StreamCheckpointError, match="already committed batch 1"):
        events.append(batch(100, 3), stream_id="s", batch_id=0)
    merged = events.merge(batch(1, 1).selectExpr("id", "'merged' AS label"), "t.id = s.id",
                          [MergeClause("matched", "update_star")],
                          "t", "s", stream_id="s", batch_id=2)
    assert merged.updated == 1
    again = events.merge(batch(1, 1).selectExpr("id", "'again' AS label"), "t.id = s.id",
                         [MergeClause("matched", "update_star")],
                         "t", "s", stream_id="s", batch_id=2)
    assert (again.snapshot, again.updated) == (merged.snapshot, 0)
    events.replace_using(batch(2, 1).selectExpr("id", "'replaced' AS label"), ["id"],
                         stream_id="s", batch_id=3)
    events.replace_using(batch(2, 1).selectExpr("id", "'twice' AS label"), ["id"],
                         stream_id="s", batch_id=3)
    assert len(lake.snapshots()) == count + 2
    assert sorted(tuple(r) for r in events.read().collect()) == [
        (0, "row 0"), (1, "merged"), (2, "replaced"), (10, "a"), (11, "b")]
    assert_same(duck, "events", events.read())


def test_racing_commits_of_one_batch_land_once(spark, lake):  # noqa: ANN001
    """Two writers of the same batch both planned before either committed: the check runs
    inside the commit's catalog transaction, so the second commits nothing."""
    table = lake.create_table("main.t", spark.range(0).selectExpr("id"))
    table_id = table.info().table_id
    txs = [Transaction(lake.catalog) for _ in range(2)]
    for n, tx in enumerate(txs):
        tx.once(StreamBatch("race", 7, table_id))
        data_files.insert(tx, TableRef(table_id), [], [{"id": n}])
    landed = txs[0].commit()
    assert txs[1].commit() == landed and txs[1].replayed == landed
    assert ids(table) == [0]


def test_batch_write_append_and_overwrite(spark, lake, lake_target, duck):  # noqa: ANN001
    table = lake.create_table("main.b", spark.range(0).selectExpr("id", "'' AS label"))

    def write(df, mode):  # noqa: ANN001, ANN202
        writer = df.write.format("ducklake").option("catalog", lake_target.catalog)
        if lake_target.metadata_schema:
            writer = writer.option("metadata_schema", lake_target.metadata_schema)
        writer.mode(mode).save("main.b")

    rows = spark.range(0, 50, numPartitions=3).selectExpr("id", "concat('r', id) AS label")
    before = len(lake.snapshots())
    write(rows, "append")
    write(rows.limit(5), "append")
    assert len(lake.snapshots()) == before + 2
    assert lake.snapshots()[-1].changes_made == "inlined_insert:1"
    assert len(ids(table)) == 55
    write(rows.where("id < 20"), "overwrite")
    assert ids(table) == list(range(20))
    assert_same(duck, "b", table.read())
    with pytest.raises(Exception, match="ErrorIfExists"):
        write(rows, "errorifexists")


def test_bad_input_is_a_clear_error(spark, lake, lake_target, tmp_path):  # noqa: ANN001
    lake.create_table("main.ev", spark.range(0).selectExpr("id", "'' AS label"))
    src = str(tmp_path / "src")
    feed(src, 0, 2)
    with pytest.raises(Exception, match="main.nope"):
        run(sink(spark, lake_target, src, str(tmp_path / "ck1"), table="main.nope"))
    wrong = (spark.readStream.schema(SCHEMA).parquet(src).selectExpr("id", "id AS extra")
             .writeStream.format("ducklake").option("catalog", lake_target.catalog)
             .option("table", "main.ev").option("checkpointLocation", str(tmp_path / "ck2")))
    if lake_target.metadata_schema:
        wrong = wrong.option("metadata_schema", lake_target.metadata_schema)
    with pytest.raises(Exception, match="missing label; not in the table: extra"):
        run(wrong.trigger(availableNow=True))
    with pytest.raises(Exception, match='needs .option\\("catalog"'):
        spark.range(1).write.format("ducklake").mode("append").save("main.ev")
    counts = (spark.readStream.schema(SCHEMA).parquet(src).groupBy("label").count()
              .selectExpr("count AS id", "label"))
    with pytest.raises(Exception, match="does not support Update mode"):
        run(counts.writeStream.format("ducklake").outputMode("update")
            .option("catalog", lake_target.catalog).option("table", "main.ev")
            .option("checkpointLocation", str(tmp_path / "ck3")).trigger(availableNow=True))


def test_flush_inlined_rows_option(spark, lake, lake_target, duck, tmp_path):  # noqa: ANN001
    """Inlined batches accumulate until the table holds more than flushInlinedRows; the
    commit that passes it is followed by a flush in its own snapshot."""
    table = lake.create_table("main.fl", spark.range(0).selectExpr("id", "'' AS label"))
    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    expected = feed(src, 0, 4) + feed(src, 1, 4)
    before = len(lake.snapshots())
    run(sink(spark, lake_target, src, ck, table="main.fl", flushInlinedRows="8"))
    assert [s.changes_made for s in lake.snapshots()[before:]] == [
        "inlined_insert:1", "inlined_insert:1"]  # 8 rows: not past the limit
    assert not parquet_files(lake_target.data_path)

    expected += feed(src, 2, 4)
    run(sink(spark, lake_target, src, ck, table="main.fl", flushInlinedRows="8"))
    last = lake.snapshots()[-2:]
    assert last[0].changes_made == "inlined_insert:1"
    assert last[1].changes_made == "inline_flush:1"
    assert marks(lake)[-2:] == [2, None]  # the flush is no batch of the stream
    assert len(parquet_files(lake_target.data_path)) == 1
    assert ids(table) == sorted(expected)
    assert_same(duck, "fl", table.read())
    # DuckDB sees no inlined row left, and each row's lineage where it was
    assert duck.execute("SELECT count(*) FROM ducklake_list_files('lake', 'fl')"
                        ).fetchone() == (1,)
    assert duck.execute("SELECT count(*) FROM lake.fl AT (VERSION => "
                        f"{last[0].snapshot_id - 1})").fetchone() == (8,)


def test_partitioned_table(spark, lake, lake_target, duck, tmp_path):  # noqa: ANN001
    """A partitioned target: each batch's files go to DuckDB's hive directories with their
    partition values (identity and a bucket transform); small batches are inlined."""
    table = lake.create_table("main.p", spark.range(0).selectExpr("id", "'' AS label"),
                              partition_by=["label", "bucket(2, id)"])
    src = str(tmp_path / "src")
    expected = feed(src, 0, 40) + feed(src, 1, 3)
    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
              .selectExpr("id", "CAST(id % 3 AS STRING) AS label")
              .writeStream.format("ducklake").option("catalog", lake_target.catalog)
              .option("table", "main.p").option("checkpointLocation", str(tmp_path / "ck")))
    if lake_target.metadata_schema:
        stream = stream.option("metadata_schema", lake_target.metadata_schema)
    run(stream.trigger(availableNow=True))
    assert ids(table) == sorted(expected)
    # (the file source may take the two files in either order)
    assert sorted(s.changes_made for s in lake.snapshots()[-2:]) == [
        "inlined_insert:1", "inserted_into_table:1"]
    files = parquet_files(lake_target.data_path)
    assert len(files) == 6  # 3 labels x 2 buckets
    assert all("/label=" in f and "/bucket=" in f for f in files), files
    assert_same(duck, "p", table.read())
    listed = duck.execute(
        "SELECT count(*) FROM ducklake_list_files('lake', 'p')").fetchone()
    assert listed == (6,)
    # DuckDB prunes by the partition values the sink registered
    assert duck.execute("SELECT count(*) FROM lake.p WHERE label = '1'").fetchone() == (
        len([i for i in expected if i % 3 == 1]),)
