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
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.views import ViewRegistry, parse_name

pytestmark = pytest.mark.spark

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
    lake.lake.set_option("data_inlining_row_limit", "0")


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
