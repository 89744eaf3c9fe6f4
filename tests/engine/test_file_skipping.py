"""File skipping: a read opens only the files whose partition values and statistics allow a
matching row, on every read path, and the answers stay DuckDB's.

A skipped file is proved unopened by removing it from disk after the commit: the narrowed
query still answers, the same query without the filter fails on the missing file.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from decimal import Decimal

import pytest
from oracle import duck_rows, spark_rows
from pyspark.sql import functions as F

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError
from dbt.adapters.ducklake.spark.skipping import MIN_BYTES_CONF
from dbt.adapters.ducklake.spark.table_state import load_state
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]

DAYS = 6
GONE = "FILE_NOT_EXIST|is missing"  # Spark's words, or ours when a view is first registered


@pytest.fixture(autouse=True)
def judge_every_read(spark):  # noqa: ANN001, ANN201
    """The tables here are small: files are judged however few bytes they hold."""
    spark.conf.set(MIN_BYTES_CONF, "0")
    yield
    spark.conf.unset(MIN_BYTES_CONF)


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def rows(engine, sql: str) -> list[tuple]:  # noqa: ANN001
    return spark_rows(engine.execute(sql).df)


def oracle(duck, table: str, predicate: str) -> list[tuple]:  # noqa: ANN001
    """DuckDB's answer, computed over every row: the LIMIT keeps DuckDB's own file skipping
    out (DuckDB 1.5.5 skips a file with NaN for ``f <> x`` when min = max = x)."""
    return sorted(duck_rows(duck, f"SELECT * FROM (SELECT * FROM lake.{table} LIMIT 1000000000)"
                                  f" WHERE {duck_predicate(predicate)}"))


def file_of(lake, table: str, where: str, version: int | None = None) -> int:  # noqa: ANN001
    """The data file id holding the rows ``where`` selects (one file)."""
    from dbt.adapters.ducklake.spark.read import FILE_ID

    ids = {r[0] for r in lake.table(f"main.{table}").read(version=version, metadata=True)
           .where(where).select(FILE_ID).collect()}
    assert len(ids) == 1 and None not in ids, ids
    return ids.pop()


def remove_all_but(lake, table: str, keep: int) -> None:  # noqa: ANN001
    for fid, path in live_paths(lake, table).items():
        if fid != keep:
            os.remove(path)


def corrupt_all_but(lake, table: str, keep: int) -> None:  # noqa: ANN001
    """Zero every other file's bytes (same size: only opening it can tell)."""
    for fid, path in live_paths(lake, table).items():
        if fid != keep:
            size = os.path.getsize(path)
            with open(path, "wb") as out:
                out.write(b"\0" * size)


def live_paths(lake, table: str) -> dict[int, str]:  # noqa: ANN001
    """Data file id -> local path of the live files of ``main.<table>``."""
    state = load_state(lake.catalog, "main", table)
    return {f.data_file_id: state.path_of(f).removeprefix("file://").removeprefix("file:")
            for f in state.data_files}


@pytest.fixture
def by_day(spark, lake):  # noqa: ANN001, ANN201
    """``main.t``: one file per day, ids ascending with the day, partitioned by day."""
    df = spark.range(0, DAYS * 50, 1, 1).selectExpr(
        "id", "date_add(date'2024-01-01', cast(id div 50 as int)) AS day",
        "cast(id * 1.5 as double) AS v", "concat('k', lpad(cast(id as string), 4, '0')) AS k")
    return lake.create_table("main.t", df.repartition(DAYS, "day"), partition_by=["day"])


def test_a_skipped_file_is_never_opened(engine, lake, by_day, caplog):  # noqa: ANN001
    paths = live_paths(lake, "t")
    assert len(paths) == DAYS
    wanted = "select count(*), sum(id) from `main.t` where day = date'2024-01-03'"
    assert rows(engine, wanted) == [(50, sum(range(100, 150)))]
    # every file but the one holding 2024-01-03 goes: the narrowed read never opens them
    keep = {fid for fid, p in paths.items() if "2024-01-03" in p}
    assert len(keep) == 1
    for fid, path in paths.items():
        if fid not in keep:
            os.remove(path)
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.ducklake"):
        assert rows(engine, wanted) == [(50, sum(range(100, 150)))]
    assert f"main.t@{lake.current_snapshot().snapshot_id}: read 1 of {DAYS} files " \
        f"(skipped by partition: {DAYS - 1}, by statistics: 0)" in caplog.text
    # by statistics (id is not a partition column): the id range lies in the kept file
    assert rows(engine, "select count(*) from `main.t` where id between 120 and 130") == [(11,)]
    for unnarrowed in ("select count(*) from `main.t`",
                       "select count(*) from `main.t` where id between 20 and 130"):
        with pytest.raises(Exception, match=GONE):
            rows(engine, unnarrowed)


def test_statistics_skip_files_of_an_unpartitioned_table(spark, engine, lake, caplog):  # noqa: ANN001
    df = spark.range(0, 400, 1, 4).selectExpr("id", "cast(id as string) AS s")
    lake.create_table("main.u", df)
    assert len(live_paths(lake, "u")) == 4
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.ducklake"):
        assert rows(engine, "select count(*) from main.u where id >= 350") == [(50,)]
    assert "read 1 of 4 files (skipped by partition: 0, by statistics: 3)" in caplog.text
    # a two-part name, a subquery, a join and a view (of a view) all narrow the same way
    sql = """select count(*) from main.u a join (select id from `main.u` where id < 10) b
             on a.id = b.id where a.id in (1, 2, 3, 500)"""
    engine.execute("create view main.uv as select id, s from main.u where s is not null")
    engine.execute("create view main.uvv as select * from `main.uv`")
    through_views = "select count(*) from main.uvv where id between 20 and 29"
    assert rows(engine, through_views) == [(10,)]
    remove_all_but(lake, "u", file_of(lake, "u", "id < 100"))
    assert rows(engine, sql) == [(3,)]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.ducklake"):
        assert rows(engine, through_views) == [(10,)]
    assert "read 1 of 4 files (skipped by partition: 0, by statistics: 3)" in caplog.text
    assert rows(engine, "select max(id) from main.u where id < 100 or id is null") == [(99,)]
    assert rows(engine, "select count(*) from main.u where not (id >= 100)") == [(100,)]


def test_a_scalar_subquery_bound_is_evaluated_first(spark, engine, lake):  # noqa: ANN001
    """The incremental model's ``where ts > (select max(ts) from {{ this }})``."""
    events = spark.range(0, 300, 1, 3).selectExpr(
        "id", "timestamp_seconds(1700000000 + id * 60) AS ts")
    lake.create_table("main.events", events)
    lake.create_table("main.done", events.where("id < 200").coalesce(1))
    sql = "select count(*) from `main.events` where ts > (select max(ts) from `main.done`)"
    assert rows(engine, sql) == [(100,)]
    remove_all_but(lake, "events", file_of(lake, "events", "id >= 200"))
    assert rows(engine, sql) == [(100,)]


def test_files_are_kept_when_the_catalog_cannot_prove_anything(spark, engine, lake, duck):  # noqa: ANN001
    """NULL-only files, NaN, columns added after a file, renamed columns and strings: the
    answers are DuckDB's, whatever the statistics say."""
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    duck.execute("CREATE TABLE lake.m(id INT, f DOUBLE, s VARCHAR)")
    duck.execute("INSERT INTO lake.m VALUES (1, 'nan', 'abc'), (2, 1.0, 'abcz')")
    duck.execute("INSERT INTO lake.m VALUES (3, NULL, NULL), (4, NULL, NULL)")
    duck.execute("INSERT INTO lake.m VALUES (5, -0.0, 'b'), (6, 2.5, 'abca')")
    duck.execute("ALTER TABLE lake.m ADD COLUMN n INT DEFAULT 7")
    duck.execute("INSERT INTO lake.m VALUES (7, 3.0, 'c', 1)")
    duck.execute("ALTER TABLE lake.m RENAME COLUMN id TO ident")
    duck.execute("ALTER TABLE lake.m ALTER ident SET DATA TYPE BIGINT")  # a promoted type
    duck.execute("INSERT INTO lake.m VALUES (8000000000, 4.0, 'd', 2)")
    predicates = [
        "f > 100", "f = 'NaN'", "f >= 2.5", "f = 0.0", "f <> 1.0", "f is null",
        "f is not null", "s = 'abca'", "s > 'abcy'", "s < 'abc'", "s in ('b', 'zz')",
        "s is null", "n = 7", "n = 1", "n > 3", "n is null", "ident between 3 and 4",
        "ident = 5 or s = 'c'", "not (ident < 6)", "ident <> 3",
        "ident in (1, 7) and f is not null", "ident > 7", "ident = 8000000000",
    ]
    for predicate in predicates:
        ours = sorted(rows(engine, f"select * from main.m where {predicate}"))
        assert ours == oracle(duck, "m", predicate), predicate


TYPED = [
    ("i8", "TINYINT", "cast(i % 100 AS TINYINT)", ["i8 = 7", "i8 < 3", "i8 >= 90"]),
    ("i64", "BIGINT", "i * 1000000000", ["i64 = 5000000000", "i64 > 9990000000000"]),
    ("u32", "UINTEGER", "cast(i AS UINTEGER)", ["u32 = 7", "u32 between 10 and 12"]),
    ("dec", "DECIMAL(12,3)", "cast(i / 8 AS DECIMAL(12,3))", ["dec = 12.5", "dec < 1.0"]),
    ("f32", "FLOAT", "cast(i / 4 AS FLOAT)", ["f32 = 2.25", "f32 > 240"]),
    ("d", "DATE", "DATE '2020-01-01' + i::INT", ["d = date'2020-02-01'", "d >= date'2020-12-01'"]),
    ("ts", "TIMESTAMP", "TIMESTAMP '2020-01-01' + i * INTERVAL 1 HOUR",
     ["ts = timestamp_ntz'2020-01-02 03:00:00'", "ts < timestamp_ntz'2020-01-01 05:00:00'"]),
    ("tz", "TIMESTAMPTZ", "TIMESTAMPTZ '2020-01-01 00:00:00+00' + i * INTERVAL 1 HOUR",
     ["tz = timestamp'2020-01-02 03:00:00Z'", "tz >= timestamp'2020-01-11 00:00:00Z'"]),
    ("str", "VARCHAR", "lpad(i::VARCHAR, 4, '0')", ["str = '0042'", "str >= '0990'"]),
    ("b", "BOOLEAN", "i % 250 = 0", ["b", "not b"]),
]


@pytest.mark.postgres_too
@pytest.mark.parametrize("writer", ["duckdb", "spark", "inlined"])
def test_answers_equal_duckdb_for_every_type(spark, engine, lake, duck, writer):  # noqa: ANN001
    """``inlined``: the last quarter of the rows is inlined in the catalog (never skipped)
    beside three files, and some rows of the files are deleted."""
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    columns = ", ".join(f"{name} {kind}" for name, kind, _, _ in TYPED)
    values = ", ".join(expr for _, _, expr, _ in TYPED)
    duck.execute(f"CREATE TABLE lake.src(i INT, {columns})")
    for start in range(0, 1000, 250):  # four files of ascending values
        if writer == "inlined" and start == 750:
            duck.execute("CALL lake.set_option('data_inlining_row_limit', 1000)")
        duck.execute(f"INSERT INTO lake.src SELECT i, {values} FROM range({start}, "
                     f"{start + 250}) r(i)")
    if writer == "inlined":
        duck.execute("DELETE FROM lake.src WHERE i % 97 = 3 OR i BETWEEN 990 AND 995")
        assert lake.table("main.src").state().inlined, "the last rows should be inlined"
    if writer == "spark":
        lake.create_table("main.typed", lake.table("main.src").read().repartition(4, "i")
                          .sortWithinPartitions("i"))
    table = "typed" if writer == "spark" else "src"
    for _name, _, _, predicates in TYPED:
        for predicate in predicates:
            ours = sorted(rows(engine, f"select * from main.{table} where {predicate}"))
            assert ours == oracle(duck, table, predicate), predicate


def duck_predicate(predicate: str) -> str:
    return (predicate.replace("timestamp_ntz'", "TIMESTAMP '").replace("date'", "DATE '")
            .replace("timestamp'", "TIMESTAMPTZ '"))


@pytest.mark.parametrize("spec", ["year(ts), month(ts)", "day(ts)", "bucket(4, id)",
                                  "year(d), month(d), day(d)", "region"])
def test_partition_transforms_skip_and_stay_right(spark, engine, lake, duck, spec):  # noqa: ANN001
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    duck.execute("CREATE TABLE lake.p(id INT, ts TIMESTAMP, d DATE, region VARCHAR)")
    duck.execute(f"ALTER TABLE lake.p SET PARTITIONED BY ({spec})")
    rows_of = """SELECT i, TIMESTAMP '2023-11-28' + i * INTERVAL 7 HOUR,
                    DATE '2023-12-30' + (i // 10)::INT, CASE WHEN i % 3 = 0 THEN NULL
                    ELSE 'r' || (i % 3)::VARCHAR END FROM range({}, {}) r(i)"""
    duck.execute("INSERT INTO lake.p " + rows_of.format(0, 180))
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 100)")
    duck.execute("INSERT INTO lake.p " + rows_of.format(180, 200))  # inlined, unpartitioned
    predicates = [
        "ts >= timestamp_ntz'2024-01-01 00:00:00'", "ts < timestamp_ntz'2023-12-01 00:00:00'",
        "ts = timestamp_ntz'2023-12-05 03:00:00'", "d = date'2024-01-02'",
        "d between date'2023-12-30' and date'2023-12-31'", "id = 17", "id in (3, 99, 150)",
        "region = 'r1'", "region is null", "region is not null and id < 30",
    ]
    for predicate in predicates:
        ours = sorted(rows(engine, f"select * from main.p where {predicate}"))
        assert ours == oracle(duck, "p", predicate), (spec, predicate)


def test_time_travel_and_deletes_keep_answers(spark, engine, lake):  # noqa: ANN001
    table = lake.create_table("main.h", spark.range(0, 300, 1, 3).selectExpr("id"))
    first = lake.current_snapshot().snapshot_id
    table.delete("id >= 250")
    table.append(spark.range(1000, 1010).selectExpr("id"))  # inlined rows
    assert rows(engine, "select count(*) from main.h where id > 240") == [(19,)]
    assert rows(engine, f"select count(*) from `main.h@v{first}` where id > 240") == [(59,)]
    assert rows(engine, "select count(*) from main.h where id = 1005") == [(1,)]


def test_the_python_api_skips_files(spark, lake):  # noqa: ANN001
    table = lake.create_table("main.api", spark.range(0, 400, 1, 4).selectExpr(
        "id", "id * 2 AS v"))
    corrupt_all_but(lake, "api", file_of(lake, "api", "id >= 300"))
    assert table.read(where="id >= 300").count() == 100
    assert table.read().where("id >= 300").groupBy().sum("v").collect()[0][0] == \
        sum(2 * i for i in range(300, 400))
    assert table.read().where(F.col("id") >= 300).count() == 100
    with pytest.raises(Exception, match="not a Parquet file|PARQUET"):
        table.read().count()


def test_decimal_and_date_literals_of_other_spellings(spark, engine, lake):  # noqa: ANN001
    lake.create_table("main.lit", spark.createDataFrame(
        [(i, Decimal(i) / 4, dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(40)],
        "id int, dec decimal(10,2), d date").repartition(4, "id").sortWithinPartitions("id"))
    assert rows(engine, "select count(*) from main.lit where d >= '2024-02-01'") == [(9,)]
    assert rows(engine, "select count(*) from main.lit where dec = 2.5") == [(1,)]
    assert rows(engine, "select count(*) from main.lit where d > date_add('2024-01-01', 35)") \
        == [(4,)]


def test_the_change_feed_skips_files(spark, engine, lake, duck):  # noqa: ANN001
    """Insertions, deletions and changes read only the files a filter can match, ended files
    included, and give DuckDB's rows."""
    table = lake.create_table("main.cf", spark.range(0, 300, 1, 3).selectExpr("id", "id * 2 AS v"))
    start = lake.current_snapshot().snapshot_id + 1
    table.append(spark.range(1000, 1300, 1, 3).selectExpr("id", "id * 2 AS v"))
    table.delete("id between 1000 and 1010 or id = 5")
    table.update({"v": "v + 1"}, where="id = 1250")
    end = lake.current_snapshot().snapshot_id
    feeds = {"insertions": "ducklake_table_insertions", "deletions": "ducklake_table_deletions",
             "changes": "ducklake_table_changes"}
    predicates = ["id >= 1200", "id between 1003 and 1004", "id = 5", "id < 1100 and v > 0"]
    for feed, function in feeds.items():
        columns = "snapshot_id, rowid, change_type, id, v" if feed == "changes" else "id, v"
        for predicate in predicates:
            ours = sorted(rows(engine, f"select {columns} from `main.cf@{feed}:{start}..{end}` "
                                       f"where {predicate}"))
            theirs = sorted(duck_rows(duck, f"SELECT {columns} FROM (SELECT * FROM {function}("
                                            f"'lake', 'main', 'cf', {start}, {end}) LIMIT "
                                            f"1000000000) WHERE {predicate}"))
            assert ours == theirs, (feed, predicate)
    keep = file_of(lake, "cf", "id = 1250", version=start)  # the update's new row is inlined
    corrupt_all_but(lake, "cf", keep)
    assert sorted(rows(engine, f"select id, v from `main.cf@insertions:{start}..{end}` "
                               "where id = 1250")) == [(1250, 2500), (1250, 2501)]


def test_small_tables_are_read_whole_unless_asked(spark, engine, lake, by_day, caplog):  # noqa: ANN001
    wanted = "select count(*) from `main.t` where day = date'2024-01-03'"
    total = sum(os.path.getsize(p) for p in live_paths(lake, "t").values())
    spark.conf.set(MIN_BYTES_CONF, str(total + 1))  # judging would cost more than reading
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.ducklake"):
        assert rows(engine, wanted) == [(50,)]
        assert by_day.read(where="day = date'2024-01-03'").count() == 50
    assert "files (skipped by" not in caplog.text
    caplog.clear()
    spark.conf.set(MIN_BYTES_CONF, str(total))
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.ducklake"):
        assert rows(engine, wanted) == [(50,)]
    assert f"read 1 of {DAYS} files" in caplog.text
    spark.conf.set(MIN_BYTES_CONF, "16MB")
    with pytest.raises(InvalidArgumentError, match="must be a number of bytes"):
        rows(engine, wanted)
