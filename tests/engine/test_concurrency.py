"""Our writer and DuckDB's commit to one lake at the same time: nothing lost, conflicts clear."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from conftest import duckdb_connect
from oracle import assert_same

from dbt.adapters.ducklake.lake import CommitConflictError
from dbt.adapters.ducklake.spark import SparkLake

pytestmark = pytest.mark.spark



def before_commit(monkeypatch, lake, action):  # noqa: ANN001, ANN201
    """Run ``action`` (another writer) after our statement is planned, before it commits."""
    original = SparkLake.commit

    def commit(self, tx, info=None):  # noqa: ANN001, ANN202
        action()
        monkeypatch.setattr(SparkLake, "commit", original)
        return original(self, tx, info)

    monkeypatch.setattr(SparkLake, "commit", commit)


def test_concurrent_inserts_all_land(spark, lake, lake_target):  # noqa: ANN001
    table = lake.create_table("main.events",
                              spark.createDataFrame([(0, "seed")], "id long, src string"))
    errors: list[BaseException] = []

    # DuckDB runs in its own process, as it would in production: two SQLite libraries in one
    # process break each other's POSIX file locks. DuckDB does not retry SQLite's "database is
    # locked" (it cannot wait while upgrading a read lock), so its writer retries, as a DuckDB
    # user sharing a SQLite catalog must.
    script = (
        f"import sys; sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r})\n"
        "from conftest import duckdb_connect\n"
        "con = duckdb_connect()\n"
        f"con.execute({lake_target.duckdb_attach!r})\n"
        "import time\n"
        "for i in range(1, 16):\n"
        "    for attempt in range(50):\n"
        "        try:\n"
        "            con.execute(f\"INSERT INTO lake.events VALUES ({1000 + i}, 'duckdb')\")\n"
        "            break\n"
        "        except Exception as exc:\n"
        "            if 'database is locked' not in str(exc): raise\n"
        "            time.sleep(0.05)\n"
    )

    def duckdb_writer() -> None:
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        if result.returncode:
            errors.append(RuntimeError(result.stderr[-2000:]))

    thread = threading.Thread(target=duckdb_writer)
    thread.start()
    for i in range(1, 16):
        table.append(spark.createDataFrame([(i, "spark")], "id long, src string"))
    big = spark.range(2000, 2050).selectExpr("id", "'spark' AS src")
    table.append(big)
    thread.join()
    assert not errors, errors
    rows = table.read().groupBy("src").count().collect()
    assert {r["src"]: r["count"] for r in rows} == {"seed": 1, "spark": 65, "duckdb": 15}
    assert table.read().select("id").distinct().count() == 81
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    assert_same(duck, "events", table.read())


def test_our_delete_racing_a_duckdb_insert_fails_cleanly(spark, lake, lake_target,  # noqa: ANN001
                                                         monkeypatch):
    table = lake.create_table("main.t", spark.range(40).selectExpr("id", "id * 2 AS v"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    before_commit(monkeypatch, lake, lambda: duck.execute("INSERT INTO lake.t VALUES (99, 1)"))
    files_before = sorted(os.listdir(os.path.join(lake_target.data_path, "main", "t")))
    snapshots_before = len(lake.snapshots())
    with pytest.raises(CommitConflictError, match="delete from table .* another transaction "
                                                  "has inserted into it"):
        table.delete("id < 20")
    assert len(lake.snapshots()) == snapshots_before + 1  # only DuckDB's insert landed
    assert sorted(os.listdir(os.path.join(lake_target.data_path, "main", "t"))) == files_before
    assert table.read().count() == 41
    assert_same(duck, "t", table.read())
    duck.close()


def test_insert_racing_insert_on_other_table_lands_after_retry(spark, lake, lake_target,  # noqa: ANN001
                                                               monkeypatch):
    a = lake.create_table("main.a", spark.range(20).selectExpr("id"))
    lake.create_table("main.b", spark.range(20).selectExpr("id"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    before_commit(monkeypatch, lake, lambda: duck.execute("DELETE FROM lake.b WHERE id < 15"))
    a.delete("id < 12")
    assert a.read().count() == 8
    assert duck.execute("SELECT count(*) FROM lake.b").fetchone() == (5,)
    assert_same(duck, "a", a.read())
    duck.close()


def test_duckdb_delete_racing_our_insert_fails_in_duckdb(spark, lake, lake_target):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(30).selectExpr("id"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    duck.execute("BEGIN")
    duck.execute("DELETE FROM lake.t WHERE id < 20")
    table.append(spark.range(100, 130).selectExpr("id"))
    with pytest.raises(Exception, match="(?i)conflict|another transaction"):
        duck.execute("COMMIT")
    duck.close()
    assert table.read().count() == 60
