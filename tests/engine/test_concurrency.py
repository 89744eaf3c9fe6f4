"""Our writer and DuckDB's commit to one lake at the same time: nothing lost, conflicts clear."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import duckdb_connect
from oracle import assert_same, rows, spark_rows

from dbt.adapters.ducklake.lake import CommitConflictError
from dbt.adapters.ducklake.lake.commit import Transaction
from dbt.adapters.ducklake.spark import dml

pytestmark = pytest.mark.spark

TESTS = os.path.dirname(os.path.dirname(__file__))

def before_commit(monkeypatch, lake, action):  # noqa: ANN001, ANN201
    """Run ``action`` (another writer) after our statement is planned, before it commits."""
    original = dml.commit

    def commit(tx, info):  # noqa: ANN001, ANN202
        action()
        monkeypatch.setattr(dml, "commit", original)
        return original(tx, info)

    monkeypatch.setattr(dml, "commit", commit)


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


def replans(monkeypatch) -> list[tuple[int, int]]:  # noqa: ANN001
    """Record each time a commit planned a statement again, as (since, until)."""
    seen: list[tuple[int, int]] = []
    original = Transaction._replan

    def spy(self, latest):  # noqa: ANN001, ANN202
        seen.append((self.base.snapshot_id, latest.snapshot_id))
        return original(self, latest)

    monkeypatch.setattr(Transaction, "_replan", spy)
    return seen


def during_first_replan(monkeypatch, action) -> None:  # noqa: ANN001
    """Run ``action`` (another writer) while the statement plans the rows inserted meanwhile
    for the first time, so that the commit has to plan again while it holds the lake."""
    original = dml.Target.inserted_meanwhile

    def inserted_meanwhile(self, since, until):  # noqa: ANN001, ANN202
        monkeypatch.setattr(dml.Target, "inserted_meanwhile", original)
        action()
        return original(self, since, until)

    monkeypatch.setattr(dml.Target, "inserted_meanwhile", inserted_meanwhile)


def test_our_delete_racing_duckdb_inserts_deletes_their_matching_rows(  # noqa: ANN001
        spark, lake, lake_target, monkeypatch):
    table = lake.create_table("main.t", spark.range(40).selectExpr("id", "id * 2 AS v"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    # DuckDB inserts an inlined row and a Parquet file after we planned, and another inlined
    # row while we plan for those: every one of their rows the DELETE matches goes too
    before_commit(monkeypatch, lake, lambda: (
        duck.execute("INSERT INTO lake.t VALUES (5, -1)"),
        duck.execute("INSERT INTO lake.t SELECT i, -1 FROM range(100, 125) r(i)")))
    during_first_replan(monkeypatch, lambda: duck.execute("INSERT INTO lake.t VALUES (7, -1), "
                                                          "(300, -1)"))
    seen = replans(monkeypatch)
    snapshot = table.delete("id < 20 OR id BETWEEN 100 AND 104")
    assert len(seen) == 2 and seen[1][0] == seen[0][1], seen  # the second held the lake
    assert snapshot.snapshot_id == seen[1][1] + 1 == lake.snapshots()[-1].snapshot_id
    expected = rows([(i, i * 2) for i in range(20, 40)] + [(i, -1) for i in range(105, 125)]
                    + [(300, -1)])
    assert spark_rows(table.read()) == expected
    assert_same(duck, "t", table.read())
    # DuckDB's change feed sees our snapshot delete their rows as well as ours
    deleted = duck.execute(
        "SELECT count(*) FILTER (v = -1), count(*) FROM ducklake_table_deletions("
        f"'lake', 'main', 't', {snapshot.snapshot_id}, {snapshot.snapshot_id})").fetchone()
    assert deleted == (7, 27)
    duck.close()


def test_update_racing_a_duckdb_insert_updates_their_matching_rows(  # noqa: ANN001
        spark, lake, lake_target, monkeypatch):
    table = lake.create_table("main.t", spark.range(10).selectExpr("id", "id * 2 AS v"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    before_commit(monkeypatch, lake, lambda: duck.execute(
        "INSERT INTO lake.t VALUES (3, 30), (50, 50)"))
    table.update({"v": "-v"}, "id < 5")
    assert spark_rows(table.read()) == rows(
        [(i, -i * 2) for i in range(5)] + [(i, i * 2) for i in range(5, 10)]
        + [(3, -30), (50, 50)])
    assert_same(duck, "t", table.read())
    duck.close()


def test_overwrite_racing_a_duckdb_insert_replaces_their_rows_too(  # noqa: ANN001
        spark, lake, lake_target, monkeypatch):
    table = lake.create_table("main.t", spark.range(30).selectExpr("id"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    before_commit(monkeypatch, lake, lambda: duck.execute("INSERT INTO lake.t VALUES (99)"))
    table.overwrite(spark.range(5).selectExpr("id"))
    assert spark_rows(table.read()) == rows([(i,) for i in range(5)])
    assert_same(duck, "t", table.read())
    duck.close()


def test_merge_racing_duckdb_inserts(spark, lake, lake_target, monkeypatch):  # noqa: ANN001
    from dbt.adapters.ducklake.spark.merge import MergeClause

    table = lake.create_table("main.t", spark.range(10).selectExpr("id", "id * 2 AS v"))
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    source = spark.range(0, 4).selectExpr("id", "1000 AS v")
    upsert = [MergeClause("matched", "update_star"), MergeClause("not_matched", "insert_star")]
    # their rows the source does not match change nothing: the upsert lands
    before_commit(monkeypatch, lake, lambda: duck.execute("INSERT INTO lake.t VALUES (500, 5)"))
    result = table.merge(source.union(spark.createDataFrame([(20, 20)], "id long, v long")),
                        "t.id = s.id", upsert, "t", "s")
    assert (result.updated, result.inserted) == (4, 1)
    # a matched-only MERGE updates their matching rows too; deletes by source apply to them
    before_commit(monkeypatch, lake, lambda: duck.execute("INSERT INTO lake.t VALUES (2, 7), "
                                                          "(600, 6)"))
    result = table.merge(source.selectExpr("id", "2000 AS v"), "t.id = s.id",
                        [MergeClause("matched", "update_star"),
                         MergeClause("not_matched_by_source", "delete", "t.id >= 500")],
                        "t", "s")
    assert (result.updated, result.deleted) == (5, 2)
    assert spark_rows(table.read()) == rows(
        [(i, 2000) for i in range(4)] + [(2, 2000)] + [(i, i * 2) for i in range(4, 10)]
        + [(20, 20)])
    assert_same(duck, "t", table.read())
    # with WHEN NOT MATCHED, their row with a key the source would insert is a conflict
    files_before = sorted(os.listdir(os.path.join(lake_target.data_path, "main", "t")))
    before_commit(monkeypatch, lake, lambda: duck.execute("INSERT INTO lake.t VALUES (30, 3)"))
    with pytest.raises(CommitConflictError, match="inserted rows into main.t that the MERGE's "
                                                  "source matches"):
        table.merge(spark.createDataFrame([(1, 1), (30, 30)], "id long, v long"),
                   "t.id = s.id", upsert, "t", "s")
    assert sorted(os.listdir(os.path.join(lake_target.data_path, "main", "t"))) == \
        sorted(files_before)
    assert lake.snapshots()[-1].commit_message is None  # DuckDB's insert is the last
    assert_same(duck, "t", table.read())
    duck.close()


def test_delete_racing_a_steady_duckdb_insert_stream_lands(spark, lake, lake_target,  # noqa: ANN001
                                                          monkeypatch):
    """A DuckDB process inserts every 50 ms while we DELETE, UPDATE and MERGE: each statement
    lands (none gives up after its retries) and no row of theirs is lost."""
    from dbt.adapters.ducklake.spark.merge import MergeClause

    table = lake.create_table("main.t", spark.range(300).selectExpr("id", "'ours' AS src"))
    stop = os.path.join(lake_target.data_path, "stop")
    running = os.path.join(lake_target.data_path, "running")
    script = (
        f"import json, os, sys, time; sys.path.insert(0, {TESTS!r})\n"
        "from conftest import duckdb_connect\n"
        "con = duckdb_connect()\n"
        f"con.execute({lake_target.duckdb_attach!r})\n"
        "done, i = [], 0\n"
        f"while i < 10 or not os.path.exists({stop!r}):\n"
        "    ids = [10000 + i * 100 + k for k in range(25 if i % 4 == 3 else 1)]\n"
        "    values = ', '.join(f\"({n}, 'duckdb')\" for n in ids)\n"
        "    try:\n"
        "        con.execute(f'INSERT INTO lake.t VALUES {values}')\n"
        "        done.extend(ids)\n"
        f"        open({running!r}, 'w').close()\n"
        "    except Exception as exc:\n"
        "        if 'database is locked' not in str(exc) and 'conflict' not in str(exc): raise\n"
        "    i += 1\n"
        "    time.sleep(0.05)\n"
        "print(json.dumps(done))\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    seen = replans(monkeypatch)
    # Our statements must meet the stream: a warm JVM runs all five in less time than the
    # writer takes to start (Python, DuckDB, its extensions), so wait for its first insert.
    deadline = time.monotonic() + 120
    while not os.path.exists(running) and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        for k in range(3):
            assert table.delete(f"src = 'ours' AND id % 10 = {k}") is not None
        assert table.update({"src": "'ours2'"}, "src = 'ours' AND id < 100") is not None
        table.merge(spark.range(290, 310).selectExpr("id", "'merged' AS src"),
                   "t.id = s.id", [MergeClause("matched", "update_star")], "t", "s")
    finally:
        open(stop, "w").close()
    out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err[-3000:]
    committed = json.loads(out.strip().splitlines()[-1])
    expected = rows([(i, "ours2" if i < 100 else "merged" if i >= 290 else "ours")
                       for i in range(300) if i % 10 > 2] + [(i, "duckdb") for i in committed])
    assert spark_rows(table.read()) == expected
    assert seen, "no statement met a concurrent insert"
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
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
