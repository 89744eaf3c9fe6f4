"""INSERT INTO ... REPLACE WHERE | USING | ON and INSERT OVERWRITE: delete and insert in one
snapshot, checked against DuckDB (rows, and table_changes over the statement)."""

from __future__ import annotations

import pytest
from oracle import assert_same, duck_rows

from dbt.adapters.ducklake.lake.partitions import partition_value
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def _changes(duck, sid: int) -> dict[str, int]:  # noqa: ANN001
    return dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))


@pytest.mark.postgres_too
def test_replace_where_is_one_snapshot(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id % 5 AS day, 'old' AS tag "
                   "FROM range(100)")
    before = len(lake.snapshots())
    result = engine.execute("INSERT INTO `main.t` REPLACE WHERE day = 2 "
                            "SELECT id, 2L AS day, 'new' AS tag FROM range(1000, 1003)")
    assert len(lake.snapshots()) == before + 1
    rows = lake.table("main.t").read().collect()
    assert len(rows) == 100 - 20 + 3
    assert {r["tag"] for r in rows if r["day"] == 2} == {"new"}
    assert_same(duck, "t", lake.table("main.t").read())
    assert _changes(duck, result.snapshot.snapshot_id) == {"delete": 20, "insert": 3}


def test_replace_on_reads_the_table_as_it_was(lake, duck, engine):  # noqa: ANN001
    """A source that reads the target (an incremental model's ``{{ this }}``) is evaluated
    against the state before the statement: deleting first must not change what is inserted."""
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id AS v FROM range(10)")
    engine.execute("INSERT INTO `main.t` AS d REPLACE ON d.id = s.id "
                   "(SELECT id, v + 100 AS v FROM `main.t` WHERE id >= (SELECT max(id) - 2 "
                   "FROM `main.t`)) s")
    got = sorted((r["id"], r["v"]) for r in lake.table("main.t").read().collect())
    assert got == [(i, i) for i in range(7)] + [(7, 107), (8, 108), (9, 109)]
    assert_same(duck, "t", lake.table("main.t").read())


def test_replace_on_null_keys_match_nothing(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT * FROM VALUES (1, 'a'), (NULL, 'b') "
                   "AS v(k, s)")
    engine.execute("INSERT INTO `main.t` AS d REPLACE ON d.k = s.k "
                   "(SELECT * FROM VALUES (1, 'A'), (NULL, 'B') AS v(k, s)) s")
    got = sorted(lake.table("main.t").read().collect(), key=repr)
    assert sorted((r["k"], r["s"]) for r in got if r["k"] is not None) == [(1, "A")]
    assert sorted(r["s"] for r in got if r["k"] is None) == ["B", "b"]
    assert_same(duck, "t", lake.table("main.t").read())


def test_replace_using_is_null_safe(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT * FROM VALUES ('eu', 1), ('us', 2), "
                   "(NULL, 3), ('apac', 4) AS v(region, n)")
    result = engine.execute("INSERT INTO `main.t` REPLACE USING (region) SELECT * FROM VALUES "
                            "('eu', 10), (NULL, 30) AS v(region, n)")
    got = sorted((r["region"] or "", r["n"]) for r in lake.table("main.t").read().collect())
    assert got == [("", 30), ("apac", 4), ("eu", 10), ("us", 2)]
    assert_same(duck, "t", lake.table("main.t").read())
    assert _changes(duck, result.snapshot.snapshot_id) == {"delete": 2, "insert": 2}


def test_replace_using_unknown_column(lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT 1 AS a")
    with pytest.raises(Exception, match="unknown column.*nope"):
        engine.execute("INSERT INTO `main.t` REPLACE USING (nope) SELECT 2 AS a")


def test_replace_of_large_table_touches_only_matching_files(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id % 3 AS g FROM range(3000)")
    untouched = duck_rows(duck, "SELECT data_file FROM ducklake_list_files('lake', 't')")
    engine.execute("INSERT INTO `main.t` SELECT id, 7L AS g FROM range(5000, 8000)")
    engine.execute("INSERT INTO `main.t` REPLACE WHERE g = 7 SELECT 1L AS id, 7L AS g")
    rows = duck_rows(duck, "SELECT data_file, delete_file FROM ducklake_list_files('lake', 't')")
    assert untouched and all((f, None) in rows for (f,) in untouched)
    assert len(rows) == len(untouched)  # the g = 7 file is gone whole; the new row is inlined
    assert len(lake.table("main.t").read().where("g = 7").collect()) == 1
    assert_same(duck, "t", lake.table("main.t").read())


@pytest.mark.postgres_too
def test_insert_overwrite_dynamic_replaces_present_partitions(spark, lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id % 4 AS INT) AS p FROM range(40)")
    duck.execute("ALTER TABLE lake.t SET PARTITIONED BY (p)")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        engine.execute("INSERT OVERWRITE TABLE `main.t` SELECT 100L AS id, 1 AS p")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    rows = lake.table("main.t").read().collect()
    assert sorted(r["id"] for r in rows if r["p"] == 1) == [100]
    assert len(rows) == 31
    assert_same(duck, "t", lake.table("main.t").read())
    engine.execute("INSERT OVERWRITE TABLE `main.t` SELECT 5L AS id, 2 AS p")
    assert [tuple(r) for r in lake.table("main.t").read().collect()] == [(5, 2)]


def test_replace_on_unqualified_columns_are_the_tables(lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id AS v FROM range(5)")
    engine.execute("INSERT INTO `main.t` AS d REPLACE ON d.id = s.id AND id != 2 "
                   "(SELECT id, v + 10 AS v FROM `main.t`) s")
    got = sorted((r["id"], r["v"]) for r in lake.table("main.t").read().collect())
    assert got == [(0, 10), (1, 11), (2, 2), (2, 12), (3, 13), (4, 14)]


def test_postgres_type_names_are_accepted(lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` (a TEXT, b int8, c BOOL, d timestamp without time "
                   "zone)")
    engine.execute("INSERT INTO `main.t` SELECT 'x'::text, CAST(1 AS INT8), true, NULL")
    assert [f.dataType.simpleString() for f in lake.table("main.t").schema().fields] == [
        "string", "bigint", "boolean", "timestamp_ntz"]
    assert engine.execute("SELECT 'text' AS text FROM `main.t`").df.collect()[0][0] == "text"


def test_between_in_update_and_delete_conditions(lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, 0 AS v FROM range(30)")
    engine.execute("UPDATE `main.t` SET v = 1 WHERE id between 16 and 20")
    engine.execute("DELETE FROM `main.t` WHERE id BETWEEN 0 AND 4")
    rows = {r["id"]: r["v"] for r in lake.table("main.t").read().collect()}
    assert sorted(i for i, v in rows.items() if v == 1) == [16, 17, 18, 19, 20]
    assert min(rows) == 5


def test_insert_overwrite_dynamic_with_bucket_and_year(spark, lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` PARTITIONED BY (bucket(3, id), years(ts)) AS "
                   "SELECT id, timestamp'2024-06-01 00:00:00' + make_interval(id % 2) AS ts "
                   "FROM range(60)")
    table = lake.table("main.t")
    bucket, year = table.partition_keys()

    def partition(row) -> tuple:  # noqa: ANN001
        return partition_value(bucket, row["id"]), partition_value(year, row["ts"])

    before = table.read().collect()
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        engine.execute("INSERT OVERWRITE TABLE `main.t` SELECT 7L AS id, "
                       "timestamp'2025-03-01 00:00:00' AS ts")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    new = partition({"id": 7, "ts": table.read().where("id = 7").collect()[0]["ts"]})
    expected = sorted([(r["id"], r["ts"]) for r in before if partition(r) != new]
                      + [(7, table.read().where("id = 7").collect()[0]["ts"])])
    assert 0 < len(expected) - 1 < len(before)  # some rows replaced, most kept
    assert sorted((r["id"], r["ts"]) for r in table.read().collect()) == expected
    assert_same(duck, "t", table.read())


def test_add_column_varchar_and_defaults(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT 1 AS a")
    engine.execute("ALTER TABLE `main.t` ADD COLUMN b varchar(200) default null")
    engine.execute("ALTER TABLE `main.t` ADD COLUMN c string default 'dummy'")
    engine.execute("INSERT INTO `main.t` (a) VALUES (2)")
    table = lake.table("main.t")
    assert [f.dataType.simpleString() for f in table.schema().fields] == [
        "int", "string", "string"]
    assert sorted(tuple(r) for r in table.read().collect()) == [(1, None, "dummy"),
                                                                 (2, None, "dummy")]
    assert_same(duck, "t", table.read())
    duck.execute("INSERT INTO lake.t (a) VALUES (3)")
    assert duck_rows(duck, "SELECT c FROM lake.t WHERE a = 3") == [("dummy",)]
    with pytest.raises(Exception, match="must be a constant"):
        engine.execute("ALTER TABLE `main.t` ADD COLUMN d timestamp default now()")


def test_comment_on_table(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT 1 AS a")
    engine.execute("COMMENT ON TABLE `main.t` IS 'orders, one row each'")
    assert duck_rows(duck, "SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' "
                           "AND table_name = 't'") == [("orders, one row each",)]
    engine.execute("COMMENT ON TABLE main.t IS NULL")
    assert duck_rows(duck, "SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' "
                           "AND table_name = 't'") == [(None,)]


def test_hive_partition_clause_is_refused_untouched(lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id % 2 AS p FROM range(10)")
    before = len(lake.snapshots())
    with pytest.raises(Exception, match="REPLACE WHERE"):
        engine.execute("INSERT OVERWRITE TABLE `main.t` PARTITION (p = 1) SELECT 5L AS id")
    assert len(lake.snapshots()) == before
    assert lake.table("main.t").read().count() == 10
