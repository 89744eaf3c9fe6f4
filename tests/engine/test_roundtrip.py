"""We write with Spark, DuckDB reads: after every kind of write both engines agree."""

from __future__ import annotations

import os

import pytest
from oracle import assert_same, duck_rows, duckdb_connect, spark_rows
from pyspark.sql import types as T
from spies import counted, refused
from typed_rows import SCHEMA, make_rows

pytestmark = pytest.mark.spark

def test_every_write_reads_the_same_in_duckdb(spark, lake, duck, lake_target):  # noqa: ANN001
    table = lake.create_table("main.t", spark.createDataFrame(make_rows(0, 40), SCHEMA))
    assert_same(duck, "t", table.read())
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(40,)]

    table.append(spark.createDataFrame(make_rows(100, 3), SCHEMA))  # inlined
    assert_same(duck, "t", table.read())
    table.append(spark.createDataFrame(make_rows(200, 25), SCHEMA))  # parquet
    assert_same(duck, "t", table.read())

    table.delete("id % 10 = 3")  # 7 rows from two files: inlined deletes
    assert_same(duck, "t", table.read())
    table.delete("id >= 30 AND id < 40 OR id >= 210")  # delete files
    assert_same(duck, "t", table.read())
    table.delete("id IN (1, 2)")  # a second delete on a file: cumulative or inlined
    assert_same(duck, "t", table.read())

    table.update({"s": "concat('upd-', cast(id as string))", "big": "big + 1"}, where="id < 20")
    assert_same(duck, "t", table.read())

    for version in range(1, lake.current_snapshot().snapshot_id + 1):
        assert_same(duck, "t", table.read(version=version), at=version)

    table_id = table.info().table_id
    table.overwrite(spark.createDataFrame(make_rows(500, 12), SCHEMA))
    assert table.info().table_id == table_id
    assert_same(duck, "t", table.read())

    duck.execute("INSERT INTO lake.t (id, s) VALUES (9999, 'from duckdb')")
    assert_same(duck, "t", table.read())
    duck.execute("UPDATE lake.t SET s = 'dd' WHERE id = 501")
    duck.execute("DELETE FROM lake.t WHERE id = 502")
    assert_same(duck, "t", table.read())


def test_duckdb_checkpoint_keeps_our_live_files(spark, lake, duck, lake_target):  # noqa: ANN001
    table = lake.create_table("main.c", spark.createDataFrame(make_rows(0, 30), SCHEMA))
    table.delete("id < 12")
    table.append(spark.createDataFrame(make_rows(100, 2), SCHEMA))
    expected = spark_rows(table.read())
    duck.execute("CHECKPOINT")
    assert spark_rows(table.read()) == expected
    assert_same(duck, "c", table.read())
    leftovers = [f for _, _, fs in os.walk(lake_target.data_path) for f in fs
                 if not f.endswith(".parquet")]
    assert leftovers == []


def test_small_writes_are_inlined_and_leave_no_files(spark, lake, duck, lake_target):  # noqa: ANN001
    table = lake.create_table("main.small", SCHEMA)
    table.append(spark.createDataFrame(make_rows(0, 10), SCHEMA))
    files = [f for _, _, fs in os.walk(lake_target.data_path) for f in fs]
    assert files == []
    assert lake.current_snapshot().changes == ["inlined_insert:1"]
    assert_same(duck, "small", table.read())
    table.append(spark.sql("SELECT * FROM range(11)").selectExpr(
        *[f"cast(null as {f.dataType.simpleString()}) as {f.name}" if f.name != "id" else
          "cast(id as int) as id" for f in SCHEMA.fields]))
    assert lake.current_snapshot().changes == ["inserted_into_table:1"]
    assert_same(duck, "small", table.read())


def test_many_live_files_are_all_read(spark, lake, duck, lake_target):  # noqa: ANN001
    """Above 16 files a group's paths go to Spark as one Java array, and Spark lists them in
    a few tasks (the listing parallelism the lake sets) rather than one task per file."""
    from dbt.adapters.ducklake.spark.read import LISTING_PARALLELISM

    table = lake.create_table("main.many", spark.range(0, 4000, 1, 40).selectExpr(
        "id", "CAST(id % 7 AS INT) AS k"))
    table.delete("id % 10 = 3")
    state = table.state()
    assert len(state.data_files) == 40
    assert int(spark.conf.get(LISTING_PARALLELISM)) <= 2 * spark.sparkContext.defaultParallelism
    assert table.read().count() == 3600
    assert sorted(r.id for r in table.read().where("k = 0").collect()) == [
        i for i in range(4000) if i % 7 == 0 and i % 10 != 3]
    assert_same(duck, "many", table.read())


def executed_plan(df) -> str:  # noqa: ANN001
    return df._jdf.queryExecution().executedPlan().toString()


def test_an_arrow_table_beyond_the_inlining_limit_is_written_on_the_driver(  # noqa: ANN001
        spark, lake, duck, lake_target, monkeypatch):
    """Rows handed over as a pyarrow Table, more than are inlined, become a file pyarrow
    writes on the driver (no Spark job): DuckDB reads every type as in Spark's files. A
    partitioned table's rows still go through Spark, which lays out the partitions."""
    from dbt.adapters.ducklake.spark import write

    rows = spark.createDataFrame(make_rows(0, 25), SCHEMA).toArrow()
    table = lake.create_table("main.t", spark.createDataFrame(make_rows(100, 5), SCHEMA))
    real_stage = write.stage

    monkeypatch.setattr(write, "stage", refused("a Spark write"))
    table.append(rows)
    assert sorted(lake.current_snapshot().changes) == ["inserted_into_table:1"]
    assert_same(duck, "t", table.read())
    assert table.read().count() == 30

    monkeypatch.setattr(write, "stage", stage := counted(real_stage))
    parted = lake.create_table("main.p", spark.createDataFrame(make_rows(100, 5), SCHEMA),
                               partition_by=["b"])
    parted.append(rows)
    assert stage.calls == 2  # the create and the append
    assert_same(duck, "p", parted.read())


def test_a_plain_read_is_a_plain_parquet_scan(spark, lake, duck, lake_target):  # noqa: ANN001
    """Files without deleted rows are read as they are: no file rows are joined to their
    rows and no hidden column is read, so the scan is what ``spark.read.parquet`` does. Files
    with deletes (and metadata reads) get them, and only they."""
    table = lake.create_table("main.plain", spark.range(0, 300, 1, 3).selectExpr(
        "id", "id % 7 AS k"))
    plan = executed_plan(table.read().groupBy().sum("k"))
    assert plan.count("FileScan parquet") == 1, plan
    for internal in ("file_path", "file_size", "Join", "_ducklake_internal", "row_index"):
        assert internal not in plan, plan
    assert "_metadata" in executed_plan(table.read(metadata=True))
    table.delete("id = 5")  # one file gets a (inlined) delete: it alone needs its file row
    plan = executed_plan(table.read().groupBy().sum("k"))
    assert plan.count("FileScan parquet") == 2, plan
    # its rows find their file by its size (no two files of the scan share one here) or path
    assert "file_size" in plan or "file_path" in plan, plan
    assert table.read().count() == 299
    assert_same(duck, "plain", table.read())


FLAT = T.StructType([f for f in SCHEMA.fields if f.name not in ("arr", "mp")])


@pytest.mark.parametrize(("n_rows", "nested"), [(40, False), (6, False), (40, True)])
def test_duckdb_table_changes_labels_our_updates(spark, lake, duck, n_rows, nested):  # noqa: ANN001
    schema = SCHEMA if nested else FLAT
    rows = [r[:len(schema.fields)] for r in make_rows(0, n_rows)]
    table = lake.create_table("main.u", spark.createDataFrame(rows, schema))
    table.update({"s": "concat('upd-', cast(id as string))", "big": "big + 1"}, where="id < 5")
    sid = lake.current_snapshot().snapshot_id
    assert_same(duck, "u", table.read())
    changes = duck_rows(
        duck, f"SELECT change_type, count(*) FROM ducklake_table_changes('lake', 'main', 'u', "
        f"{sid}, {sid}) GROUP BY 1")
    assert dict(changes) == {"update_preimage": 5, "update_postimage": 5}
    ids_before = duck_rows(duck, f"SELECT rowid, id FROM lake.u AT (VERSION => {sid - 1})")
    assert duck_rows(duck, "SELECT rowid, id FROM lake.u") == ids_before


def test_a_data_path_with_glob_characters_is_read_literally(spark, tmp_path):  # noqa: ANN001
    """Spark reads a path holding ``[]{}*?`` as a glob pattern; the lake's files are named
    exactly by the catalog, so a data path such as ``.../lake[eu]{a,b}*?/`` must be read as
    written: DuckDB's files and ours, one group of files and more than 16 (one Java array),
    with deletes, time travel, the change feed, a MERGE and compaction (Spark-side only:
    SQLite)."""
    from conftest import new_lake_target

    from dbt.adapters.ducklake.spark import SparkLake
    from dbt.adapters.ducklake.spark.merge import MergeClause

    root = tmp_path / "lake[eu]{a,b}*?"
    root.mkdir()
    with new_lake_target("sqlite", root) as target, duckdb_connect() as duck:
        duck.execute(target.duckdb_attach.replace(")", ", DATA_INLINING_ROW_LIMIT 0)"))
        duck.execute("CREATE TABLE lake.d (id INTEGER, s VARCHAR)")
        for start in range(0, 170, 10):  # 17 files
            duck.execute(f"INSERT INTO lake.d SELECT i, 'd' || i FROM range({start}, "
                         f"{start + 10}) r(i)")
        duck.execute("DELETE FROM lake.d WHERE id % 7 = 0")
        lake = SparkLake.open(spark, target.catalog, target.data_path)
        try:
            theirs = lake.table("main.d")
            assert theirs.read().count() == 170 - 25
            assert_same(duck, "d", theirs.read())

            ours = lake.create_table("main.t", spark.range(0, 60, 1, 3).selectExpr(
                "CAST(id AS INT) AS id", "concat('t', id) AS s"))
            ours.delete("id < 5")
            ours.append(spark.range(100, 140).selectExpr("CAST(id AS INT) AS id", "'a' AS s"))
            assert ours.read().count() == 95
            assert ours.read(version=lake.current_snapshot().snapshot_id - 2).count() == 60
            assert ours.changes(lake.current_snapshot().snapshot_id).count() == 40
            assert_same(duck, "t", ours.read())
            ours.merge(spark.range(50, 110).selectExpr("CAST(id AS INT) AS id", "'m' AS s"),
                       "t.id = s.id", [MergeClause("matched", "update_star")], "t", "s")
            assert ours.read().where("s = 'm'").count() == 20
            assert_same(duck, "t", ours.read())
            assert not lake.merge_adjacent_files().skipped
            assert_same(duck, "t", ours.read())
            assert_same(duck, "d", theirs.read())
        finally:
            lake.close()
