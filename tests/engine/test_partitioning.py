"""Partitioned tables: we lay files out per DuckDB's partition spec and DuckDB agrees.

Each test runs over a SQLite and a PostgreSQL catalog. DuckDB (the ``duck`` fixture) is the
oracle: it reads what we write (rows, ``ducklake_list_files``, partition values, pruning),
writes partitioned tables we read, and follows the specs we set.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError, NotFoundError
from dbt.adapters.ducklake.lake.options import store_option
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.names import parse_name
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]

META = "__ducklake_metadata_lake"


@pytest.fixture(autouse=True)
def _metadata_tables(lake_target):  # noqa: ANN001, ANN202
    """Point :data:`META` at the catalog's metadata tables as DuckDB names them."""
    global META
    schema = lake_target.metadata_schema
    META = "__ducklake_metadata_lake" + (f".{schema}" if schema else "")
    yield
    META = "__ducklake_metadata_lake"
STRINGS = ["eu", "a b", "x/y", "é€ ü", "k=v%", "", None, "a'b\"c"]


def files(duck, table: str = "t") -> list[tuple]:  # noqa: ANN001
    """(relative path, partition_id, [values by key index]) of the live files of a table."""
    return duck.execute(f"""
        SELECT f.path, f.partition_id,
               list(v.partition_value ORDER BY v.partition_key_index)
                 FILTER (WHERE v.partition_key_index IS NOT NULL)
        FROM {META}.ducklake_data_file f
        JOIN {META}.ducklake_table t ON t.table_id = f.table_id AND t.end_snapshot IS NULL
        LEFT JOIN {META}.ducklake_file_partition_value v ON v.data_file_id = f.data_file_id
        WHERE t.table_name = '{table}' AND f.end_snapshot IS NULL
        GROUP BY ALL ORDER BY f.path""").fetchall()


def raw_values(duck, table: str = "t") -> list[tuple]:  # noqa: ANN001
    """(data_file_id, key index, value) rows, NULLs kept as SQL NULL."""
    return duck.execute(f"""
        SELECT v.data_file_id, v.partition_key_index, v.partition_value
        FROM {META}.ducklake_file_partition_value v
        JOIN {META}.ducklake_table t ON t.table_id = v.table_id AND t.end_snapshot IS NULL
        WHERE t.table_name = '{table}' ORDER BY ALL""").fetchall()


def partition_values_by_id(lake, duck, table: str) -> dict[int, tuple]:  # noqa: ANN001
    """Row ``id`` -> partition values of the file holding it (file ids from our reader)."""
    by_file: dict[int, list] = {}
    for fid, index, value in raw_values(duck, table):
        by_file.setdefault(fid, []).append((index, value))
    df = lake.table(f"main.{table}").read(metadata=True)
    out = {}
    for row in df.select("id", "_ducklake_data_file_id").collect():
        out[row[0]] = tuple(v for _, v in sorted(by_file.get(row[1], [])))
    return out


def no_inlining(lake) -> None:  # noqa: ANN001
    store_option(lake.catalog, "data_inlining_row_limit", "0")


@pytest.fixture
def source(spark):  # noqa: ANN001, ANN201
    rows = []
    for i in range(40):
        s = STRINGS[i % len(STRINGS)]
        ts = dt.datetime(2023 + i % 3, 1 + i % 12, 1 + i % 28, i % 24, 30, 15, 250000)
        rows.append((i, s, ts.date() if i % 7 else None, ts, ts, float(i) - 20.5,
                     Decimal(i) / 4))
    return spark.createDataFrame(
        rows, "id long, s string, d date, ts timestamp_ntz, tz timestamp, f double, "
              "dec decimal(9,2)")


@pytest.mark.postgres_too
def test_create_partitioned_identity_duckdb_agrees(lake, duck, source):  # noqa: ANN001
    no_inlining(lake)
    table = lake.create_table("main.t", source, partition_by=["s"])
    assert table.partitioning() == ["s"]
    listed = files(duck)
    assert len(listed) == len(STRINGS)  # one file per partition for one write
    by_value = {vals[0]: path for path, _, vals in listed}
    assert set(by_value) == set(STRINGS)
    assert by_value[None].startswith("s=__HIVE_DEFAULT_PARTITION__/ducklake-")
    assert by_value["a b"].startswith("s=a%20b/")
    assert by_value["x/y"].startswith("s=x%2Fy/")
    assert by_value["é€ ü"].startswith("s=%C3%A9%E2%82%AC%20%C3%BC/")
    assert by_value[""].startswith("s=/")
    assert all(pid is not None for _, pid, _ in listed)
    assert duck_rows(duck, "SELECT * FROM lake.t") == spark_rows(table.read())
    assert duck_rows(duck, "SELECT * FROM lake.t WHERE s = 'x/y'") == \
        spark_rows(table.read().where("s = 'x/y'"))
    # DuckDB prunes by the partition: the plan reads one file for an equality filter
    plan = "\n".join(r[1] for r in duck.execute(
        "EXPLAIN ANALYZE SELECT * FROM lake.t WHERE s = 'eu'").fetchall())
    assert "Total Files Read: 1" in plan, plan


@pytest.mark.parametrize("spec", [["year(ts)", "month(ts)"], ["day(d)", "hour(ts)"],
                                  ["years(tz)", "hours(tz)"], ["bucket(4, id)"],
                                  ["bucket(3, s)"], ["bucket(5, d)", "bucket(2, ts)"],
                                  ["bucket(3, tz)", "bucket(4, f)"], ["bucket(7, dec)"],
                                  ["f", "dec", "d", "ts", "tz"]])
def test_our_partition_values_match_duckdb(lake, duck, source, spec):  # noqa: ANN001
    """DuckDB writes the same rows with the same spec; the partition values per row agree."""
    no_inlining(lake)
    lake.create_table("main.t", source, partition_by=spec)
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    duck.execute("CREATE TABLE lake.d AS SELECT * FROM lake.t LIMIT 0")
    duck.execute(f"ALTER TABLE lake.d SET PARTITIONED BY ({', '.join(spec)})"
                 .replace("years(", "year(").replace("hours(", "hour("))
    duck.execute("INSERT INTO lake.d SELECT * FROM lake.t")

    def values_by_id(table: str) -> dict[int, tuple]:
        return partition_values_by_id(lake, duck, table)

    ours, theirs = values_by_id("t"), values_by_id("d")
    assert len(ours) == 40
    assert ours == theirs
    ours_paths = {p.rsplit("/", 1)[0] for p, _, _ in files(duck, "t")}
    theirs_paths = {p.rsplit("/", 1)[0] for p, _, _ in files(duck, "d")}
    assert ours_paths == theirs_paths
    assert duck_rows(duck, "SELECT * FROM lake.t") == duck_rows(duck, "SELECT * FROM lake.d")


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


@pytest.mark.postgres_too
def test_duckdb_writes_partitioned_we_read(lake, duck):  # noqa: ANN001
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    duck.execute("CREATE TABLE lake.t(id INT, region VARCHAR, ts TIMESTAMP, v DOUBLE)")
    duck.execute("ALTER TABLE lake.t SET PARTITIONED BY (region, year(ts), bucket(3, id))")
    duck.execute("""INSERT INTO lake.t SELECT i, CASE i % 3 WHEN 0 THEN 'eu' WHEN 1 THEN 'a b'
                    ELSE NULL END, TIMESTAMP '2022-05-01' + INTERVAL (i * 40) DAY, i / 3
                    FROM range(60) r(i)""")
    assert any("region=a%20b/" in p for p, _, _ in files(duck))
    table = lake.table("main.t")
    assert table.partitioning() == ["region", "year(ts)", "bucket(3, id)"]
    assert spark_rows(table.read()) == duck_rows(duck, "SELECT * FROM lake.t")
    assert spark_rows(table.read().where("region = 'a b'")) == \
        duck_rows(duck, "SELECT * FROM lake.t WHERE region = 'a b'")
    # we append with DuckDB's spec; DuckDB reads everything and our values match its own
    before = len(files(duck))
    table.append(table.read().selectExpr("id + 100 AS id", "region", "ts", "v"))
    assert len(files(duck)) > before
    assert spark_rows(table.read()) == duck_rows(duck, "SELECT * FROM lake.t")
    values = partition_values_by_id(lake, duck, "t")
    expected = dict(duck.execute(
        "SELECT id, [region, year(ts)::VARCHAR, ((murmur3_32(id) & 2147483647) % 3)::VARCHAR] "
        "FROM lake.t").fetchall())
    assert {k: tuple(v) for k, v in expected.items()} == values


def test_files_added_by_add_data_files_with_hive_partition(lake, duck, tmp_path):  # noqa: ANN001
    """A hive-partitioned foreign file whose partition column lives only in its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    duck.execute("CREATE TABLE lake.t(id INT, region VARCHAR)")
    duck.execute("ALTER TABLE lake.t SET PARTITIONED BY (region)")
    folder = tmp_path / "ext" / "region=eu"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32())}), folder / "f.parquet")
    lake.catalog.allow_reads_from(str(folder))  # outside the data path
    try:
        duck.execute(f"CALL ducklake_add_data_files('lake', 't', '{folder}/f.parquet', "
                     "hive_partitioning => true)")
    except Exception as exc:  # noqa: BLE001 - not every build accepts the option
        pytest.skip(f"DuckDB refused the hive file: {exc}")
    expected = duck_rows(duck, "SELECT * FROM lake.t")
    assert expected == [(1, "eu"), (2, "eu")]
    assert spark_rows(lake.table("main.t").read()) == expected


def test_set_and_reset_partitioning_sql(lake, duck, engine, spark):  # noqa: ANN001
    no_inlining(lake)
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id % 3 AS STRING) AS k, "
                   "TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, id) AS ts "
                   "FROM range(12)")
    assert all(pid is None for _, pid, _ in files(duck))
    engine.execute("alter table `main.t` set partitioned by (k, month(ts));")
    assert engine.partitioning(parse_name(["main.t"])) == ["k", "month(ts)"]
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    # DuckDB sees our spec and lays its own inserts out by it
    duck.execute("INSERT INTO lake.t VALUES (100, 'z', TIMESTAMP '2024-03-05 10:00:00')")
    paths = [p for p, _, _ in files(duck)]
    assert any(p.startswith("k=z/month=3/") for p in paths), paths
    # the spec applies to new files only
    old = [f for f in files(duck) if f[1] is None]
    assert old and all("/" not in p for p, _, _ in old)
    engine.execute("INSERT INTO `main.t` SELECT id + 200, 'q', ts FROM `main.t` WHERE id < 12")
    new = [f for f in files(duck) if f[2] and f[2][0] == "q"]
    assert {tuple(f[2]) for f in new} == {("q", "1")}
    snapshot = engine.execute('ALTER TABLE main."t" SET PARTITIONED BY (k, month(ts))')
    assert snapshot.snapshot is None  # same spec: nothing committed
    engine.execute("ALTER TABLE `main.t` RESET PARTITIONED BY")
    assert lake.table("main.t").partitioning() == []
    info = duck.execute(f"SELECT partition_id, end_snapshot FROM {META}.ducklake_partition_info "
                        "ORDER BY partition_id").fetchall()
    assert len(info) == 2 and info[0][1] is not None and info[1][1] is None
    assert duck.execute(f"SELECT count(*) FROM {META}.ducklake_partition_column WHERE "
                        f"partition_id = {info[1][0]}").fetchone()[0] == 0
    duck.execute("INSERT INTO lake.t VALUES (300, 'r', TIMESTAMP '2024-03-05 10:00:00')")
    assert files(duck)[-1][1] is None or any(p.startswith("ducklake-") and pid is None
                                             for p, pid, _ in files(duck))
    assert spark_rows(lake.table("main.t").read()) == duck_rows(duck, "SELECT * FROM lake.t")
    changes = [s.changes for s in lake.snapshots()]
    assert ["altered_table:1"] in changes


def test_ctas_partitioned_by_spark_syntax(lake, duck, engine):  # noqa: ANN001
    no_inlining(lake)
    engine.execute("CREATE TABLE `main.t` PARTITIONED BY (region, years(ts), bucket(4, id)) AS "
                   "SELECT id, IF(id % 2 = 0, 'eu', 'us') AS region, "
                   "TIMESTAMP'2020-06-01 00:00:00' + make_interval(id, 0, 0, 0) AS ts "
                   "FROM range(8)")
    assert lake.table("main.t").partitioning() == ["region", "year(ts)", "bucket(4, id)"]
    spec = duck.execute(f"SELECT partition_key_index, column_id, transform FROM "
                        f"{META}.ducklake_partition_column ORDER BY 1").fetchall()
    assert spec == [(0, 2, "identity"), (1, 3, "year"), (2, 1, "bucket(4)")]
    # created and partitioned in one snapshot
    assert lake.snapshots()[-1].changes == ['created_table:"main"."t"',
                                            "inserted_into_table:1"]
    assert all(p.startswith("region=") for p, _, _ in files(duck))
    assert duck_rows(duck, "SELECT * FROM lake.t") == spark_rows(lake.table("main.t").read())
    engine.execute("CREATE TABLE `main.e` (id INT, region STRING) PARTITIONED BY (region)")
    assert lake.table("main.e").partitioning() == ["region"]
    # CREATE OR REPLACE keeps the identity; without PARTITIONED BY the table is unpartitioned
    engine.execute("CREATE OR REPLACE TABLE `main.t` PARTITIONED BY (months(ts)) AS "
                   "SELECT * FROM `main.t`")
    assert lake.table("main.t").partitioning() == ["month(ts)"]
    assert all(p.startswith("month=") for p, _, _ in files(duck))
    engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT * FROM `main.t`")
    assert lake.table("main.t").partitioning() == []
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(8,)]


def test_replace_table_api_one_snapshot(lake, duck, engine, source):  # noqa: ANN001
    no_inlining(lake)
    name = parse_name(["main.t"])
    engine.replace_table(name, source, partition_by=["bucket(2, id)"])
    assert lake.snapshots()[-1].changes[0] == 'created_table:"main"."t"'
    assert engine.partitioning(name) == ["bucket(2, id)"]
    before = len(lake.snapshots())
    engine.replace_table(name, source, partition_by=["s", "year(ts)"])
    assert len(lake.snapshots()) == before + 1
    assert engine.partitioning(name) == ["s", "year(ts)"]
    engine.replace_table(name, source)  # None keeps the spec
    assert engine.partitioning(name) == ["s", "year(ts)"]
    assert all(len(v) == 2 for _, _, v in files(duck))
    assert duck_rows(duck, "SELECT * FROM lake.t") == spark_rows(lake.table("main.t").read())


def test_update_delete_merge_on_partitioned_table(lake, duck, engine, source):  # noqa: ANN001
    no_inlining(lake)
    lake.create_table("main.t", source, partition_by=["bucket(3, id)", "s"])
    engine.execute("UPDATE `main.t` SET s = 'moved' WHERE id < 20")
    engine.execute("DELETE FROM `main.t` WHERE id % 5 = 0")
    engine.execute("MERGE INTO `main.t` AS t USING (SELECT id + 1000 AS id, s, d, ts, tz, f, "
                   "dec FROM `main.t` WHERE id < 6) AS s ON t.id = s.id "
                   "WHEN NOT MATCHED THEN INSERT *")
    assert duck_rows(duck, "SELECT * FROM lake.t") == spark_rows(lake.table("main.t").read())
    values = partition_values_by_id(lake, duck, "t")
    for row in lake.table("main.t").read().collect():
        assert values[row.id][1] == row.s, row
    assert ("update_postimage",) in duck.execute(
        "SELECT DISTINCT change_type FROM lake.table_changes('t', 2, 2)").fetchall()


def test_small_writes_stay_inlined(lake, duck, spark):  # noqa: ANN001
    table = lake.create_table("main.t", spark.createDataFrame([(1, "a")], "id long, s string"),
                              partition_by=["s"])
    table.append(spark.createDataFrame([(2, "b")], "id long, s string"))
    assert files(duck) == []
    assert duck_rows(duck, "SELECT * FROM lake.t") == [(1, "a"), (2, "b")]
    duck.execute("CALL ducklake_flush_inlined_data('lake')")
    assert {tuple(v) for _, _, v in files(duck)} <= {("a",), ("b",)}
    assert spark_rows(table.read()) == [(1, "a"), (2, "b")]


def test_merge_adjacent_files_on_our_partitioned_files(lake, duck, source):  # noqa: ANN001
    no_inlining(lake)
    table = lake.create_table("main.t", source, partition_by=["year(ts)"])
    table.append(source)
    table.append(source)
    assert len(files(duck)) == 9
    result = duck.execute("SELECT * FROM ducklake_merge_adjacent_files('lake', 't')").fetchall()
    assert sorted(r[2:] for r in result) == [(3, 1)] * 3, result  # per partition: 3 -> 1
    assert sorted(tuple(v) for _, _, v in files(duck)) == [("2023",), ("2024",), ("2025",)]
    assert spark_rows(table.read()) == duck_rows(duck, "SELECT * FROM lake.t")
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(120,)]


def test_bad_specs_are_refused_with_the_accepted_list(lake, spark, source):  # noqa: ANN001
    with pytest.raises(NotFoundError, match="no column 'nope'"):
        lake.create_table("main.t", source, partition_by=["nope"])
    with pytest.raises(InvalidArgumentError, match="accepted: .*bucket"):
        lake.create_table("main.t", source, partition_by=["truncate(3, s)"])
    with pytest.raises(InvalidArgumentError, match="does not apply"):
        lake.create_table("main.t", source, partition_by=["year(id)"])
    assert lake.tables("main") == []
