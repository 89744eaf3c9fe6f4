"""``dbt build --threads 4`` while DuckDB writes to the same lake and a reader time-travels.

On a PostgreSQL catalog (the backend meant for concurrent writers):

1. a generated project (table models over Parquet and inlined rows, a seed, incremental
   ``merge`` and ``delete+insert`` models, an incremental ``append`` model ``events_log``)
   is built once (in this process, on the tests' SparkSession: only the lake it leaves matters);
2. the second ``dbt build --threads 4`` (in a subprocess; every model writes again) runs
   while a DuckDB process inserts into ``events_log`` in a loop (from dbt's first commit on,
   not while dbt starts its JVM) — the table dbt's append model writes too — and this process
   reads every snapshot as it appears, each table at that snapshot, with DuckDB
   (``AT (VERSION => n)``) and with our reader (``read(version=n)``);
3. our engine deletes from a table while another DuckDB process inserts into it every 50 ms:
   every delete lands at once, planned again for the rows inserted meanwhile; one such insert
   is forced between our plan and our commit so that path always runs.

Then: both engines agree on every table at every snapshot, and re-reading history afterwards
gives what was read live; every DuckDB insert is there once; every model holds exactly the rows
its two runs produce; no file is left that no snapshot refers to.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SPARK_TEST_CONF, duckdb_connect
from oracle import duck_rows, spark_rows
from reliability.support import REPO, child_env, leftovers

from dbt.adapters.ducklake.spark import SparkLake, dml

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.postgres]

SCHEMA = "conc"

DUCKDB_CONFLICT = (r"Transaction conflict - attempting to insert into table with index \"\d+\" "
                   r"- but another transaction has deleted (inlined data )?from it")

PROJECT = {
    "dbt_project.yml": """
name: conc
version: '1.0'
profile: conc
seed-paths: [seeds]
model-paths: [models]
""",
    "seeds/customers.csv": "id,name\n" + "".join(f"{i},c{i}\n" for i in range(12)),
    # Parquet (200 rows) and inlined (5 rows) table models, rebuilt by every run
    "models/t_numbers.sql": "{{ config(materialized='table') }}\n"
                            "select id, id * {{ var('run') }} as v from range(0, 200)",
    "models/t_small.sql": "{{ config(materialized='table') }}\n"
                          "select id, 'r{{ var(\"run\") }}' as tag from range(0, 5)",
    "models/t_customers.sql": "{{ config(materialized='table') }}\n"
                              "select id, name from {{ ref('customers') }}",
    # incremental merges: run r writes ids (r-1)*100 .. +149 (files) / r-1 .. r+3 (inlined)
    "models/m_orders.sql": "{{ config(materialized='incremental', unique_key='id') }}\n"
                           "select id, {{ var('run') }} as v from "
                           "range({{ (var('run') - 1) * 100 }}, "
                           "{{ (var('run') - 1) * 100 + 150 }})",
    "models/m_small.sql": "{{ config(materialized='incremental', unique_key='id') }}\n"
                          "select id, {{ var('run') }} as v from "
                          "range({{ var('run') - 1 }}, {{ var('run') + 4 }})",
    "models/d_orders.sql": "{{ config(materialized='incremental', "
                           "incremental_strategy='delete+insert', unique_key='id') }}\n"
                           "select id, {{ var('run') }} as v from "
                           "range({{ (var('run') - 1) * 20 }}, {{ (var('run') - 1) * 20 + 30 }})",
    # the table DuckDB appends to while dbt appends to it
    "models/events_log.sql": "{{ config(materialized='incremental', "
                             "incremental_strategy='append') }}\n"
                             "select {{ var('run') }} * 1000 + id as id, 'dbt' as src "
                             "from range(0, 20)",
    "models/s_summary.sql": "{{ config(materialized='table') }}\n"
                            "select count(*) as n, sum(v) as s from {{ ref('m_orders') }}",
}

PROFILE = """
conc:
  target: dev
  outputs:
    dev:
      type: ducklake
      catalog: "{catalog}"
      metadata_schema: {metadata_schema}
      data_path: {data_path}
      schema: {schema}
      threads: 4
      master: "local[2]"
      spark_conf:
{spark_conf}
"""

# A DuckDB writer process: once the go file exists, inserts into one table until the stop file
# appears (at least ``min_rounds`` times); every fourth insert is 25 rows (a Parquet file), the
# others one row (inlined). Prints the ids of the inserts that committed and every error.
DUCKDB_WRITER = """
import json, os, sys, time
sys.path.insert(0, {tests!r})
from conftest import duckdb_connect
con = duckdb_connect()
con.execute({attach!r})
while {go!r} and not os.path.exists({go!r}):
    time.sleep(0.02)
committed, errors, i = [], [], 0
while i < {min_rounds} or not os.path.exists({stop!r}):
    ids = [{base} + i * 100 + k for k in range(25 if i % 4 == 3 else 1)]
    values = ", ".join(f"({{n}}, 'duckdb')" for n in ids)
    try:
        con.execute(f"INSERT INTO lake.{schema}.{table} VALUES {{values}}")
        committed.extend(ids)
    except Exception as exc:
        errors.append(str(exc))
    i += 1
    time.sleep({pause})
print(json.dumps({{"committed": committed, "errors": errors}}))
"""


def start_duckdb_writer(lake_target, table: str, stop: Path, base: int, pause: float,  # noqa: ANN001
                        min_rounds: int, go: Path | None = None) -> subprocess.Popen:
    """The writer starts inserting when ``go`` exists (at once without ``go``)."""
    script = DUCKDB_WRITER.format(tests=os.path.join(REPO, "tests"),
                                  attach=lake_target.duckdb_attach, stop=str(stop), base=base,
                                  go=str(go) if go else None,
                                  schema=SCHEMA, table=table, pause=pause, min_rounds=min_rounds)
    return subprocess.Popen([sys.executable, "-c", script], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> dict[str, Any]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def write_project(root: Path, lake_target) -> None:  # noqa: ANN001
    for name, body in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    (root / "profiles.yml").write_text(PROFILE.format(
        catalog=lake_target.catalog, metadata_schema=lake_target.metadata_schema,
        data_path=lake_target.data_path, schema=SCHEMA,
        spark_conf="\n".join(f'        {k}: "{v}"' for k, v in SPARK_TEST_CONF.items())))


def build_args(root: Path, run: int) -> list[str]:
    return ["build", "--threads", "4", "--vars", json.dumps({"run": run}),
            "--project-dir", str(root), "--profiles-dir", str(root)]


def dbt_build(root: Path, run: int) -> subprocess.Popen:
    """``dbt build`` in a new process; its output goes to ``build-<run>.out`` in ``root``."""
    with open(root / f"build-{run}.out", "w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "dbt.cli.main", *build_args(root, run)],
            env=child_env(DBT_SEND_ANONYMOUS_USAGE_STATS="false"), cwd=root,
            stdout=out, stderr=subprocess.STDOUT)


def dbt_build_here(root: Path, run: int) -> None:
    """``dbt build`` in this process: the profile's ``local[2]`` and ``SPARK_TEST_CONF`` are the
    tests' SparkSession, which the adapter joins (no JVM to start)."""
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(build_args(root, run))
    failures = [f"{r.node.unique_id}: {r.status} {r.message}"
                for r in getattr(result.result, "results", None) or []
                if str(r.status) not in ("success", "pass")]
    assert result.success, f"dbt build failed: {result.exception}\n" + "\n".join(failures)


class Reader:
    """Reads every snapshot as it appears: each table of the schema at that snapshot, with
    DuckDB and (where DuckDB sees new contents) with our reader, and compares them."""

    def __init__(self, lake: SparkLake, lake_target) -> None:  # noqa: ANN001
        self.lake = lake
        self.duck = duckdb_connect()
        self.duck.execute(lake_target.duckdb_attach)
        self.seen: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        self.spark_read: set[tuple[str, int]] = set()
        self.last: dict[str, list[tuple[Any, ...]]] = {}
        self.done = 0
        self.errors: list[str] = []
        self.stop = threading.Event()

    def read(self, sid: int) -> None:
        # one DuckDB read transaction per snapshot: its reads share DuckDB's catalog lookups
        # (about a third less time per read than a transaction each), not their results
        self.duck.execute("BEGIN")
        try:
            for info in self.lake.catalog.tables(SCHEMA, at=sid):
                name = info.table_name
                duck = duck_rows(self.duck, f'SELECT * FROM lake.{SCHEMA}."{name}" '
                                            f"AT (VERSION => {sid})")
                self.seen[(name, sid)] = duck
                if self.last.get(name) != duck:  # a Spark read per new content, not per snapshot
                    ours = spark_rows(self.lake.read(f"{SCHEMA}.{name}", version=sid))
                    self.spark_read.add((name, sid))
                    if ours != duck:
                        self.errors.append(f"{name} at {sid}: ours {ours[:5]} duckdb {duck[:5]}")
                self.last[name] = duck
        finally:
            self.duck.execute("COMMIT")

    def catch_up(self) -> None:
        for snap in self.lake.snapshots():
            if snap.snapshot_id > self.done:
                self.read(snap.snapshot_id)
                self.done = snap.snapshot_id

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.catch_up()
                time.sleep(0.2)
            self.catch_up()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(f"reader failed: {type(exc).__name__}: {exc}")


def before_commit(monkeypatch, action) -> None:  # noqa: ANN001
    """Run ``action`` (another writer) after our statement is planned, before it commits."""
    original = dml.commit

    def commit(tx, info):  # noqa: ANN001, ANN202
        monkeypatch.setattr(dml, "commit", original)
        action()
        return original(tx, info)

    monkeypatch.setattr(dml, "commit", commit)


def ours_delete(lake: SparkLake, table, k: int) -> int:  # noqa: ANN001
    """Delete row ``k``: it lands on the first call, however many inserts race it; returns
    how many snapshots landed between the plan and the commit."""
    before = lake.snapshots()[-1].snapshot_id
    snapshot = table.delete(f"id = {k}")
    assert snapshot is not None
    assert table.read().where(f"id = {k}").count() == 0
    return snapshot.snapshot_id - before - 1


@pytest.mark.parametrize("lake_target", ["postgres"], indirect=True)
def test_dbt_build_with_duckdb_writer_and_time_travel_reader(spark, lake, lake_target,  # noqa: ANN001, PLR0915
                                                             tmp_path, monkeypatch):
    root = tmp_path / "project"
    write_project(root, lake_target)
    dbt_build_here(root, 1)

    # ---- the concurrent build: dbt, a DuckDB writer and our reader at once
    start = lake.snapshots()[-1].snapshot_id  # the first build's last snapshot
    reader = Reader(lake, lake_target)
    # the reader's thread reads the first build's snapshots while the writers start
    thread = threading.Thread(target=reader.run)
    thread.start()
    stop, go = tmp_path / "stop", tmp_path / "go"
    writer = start_duckdb_writer(lake_target, "events_log", stop, base=100_000, pause=1.0,
                                 min_rounds=8, go=go)
    build = dbt_build(root, 2)
    try:
        deadline = time.monotonic() + 900
        while build.poll() is None and time.monotonic() < deadline:
            # dbt has committed (the writer has not started): DuckDB starts inserting
            if not go.exists() and lake.current_snapshot().snapshot_id > start:
                go.touch()
            time.sleep(0.1)
    finally:
        go.touch()
        stop.touch()
        if build.poll() is None:
            build.kill()
            build.wait()
    duck_result = finish(writer)
    assert build.returncode == 0, (root / "build-2.out").read_text()[-4000:]
    assert duck_result["errors"] == [], duck_result["errors"]

    # ---- a delete of ours racing DuckDB inserts on one table
    race = lake.create_table(f"{SCHEMA}.race", spark.range(0, 100).selectExpr(
        "id", "'ours' AS src"))
    race_stop = tmp_path / "race-stop"
    race_writer = start_duckdb_writer(lake_target, "race", race_stop, base=200_000, pause=0.05,
                                      min_rounds=5)
    deleted = [3, 17, 42, 64, 88]
    try:
        raced = [ours_delete(lake, race, k) for k in deleted]
    finally:
        race_stop.touch()
    race_result = finish(race_writer)
    # DuckDB's inserts that lost the race fail with DuckDB's conflict error (and are absent
    # below: their ids are not among the committed ones)
    for error in race_result["errors"]:
        assert re.search(DUCKDB_CONFLICT, error), error
    print(f"live race: {len(deleted)} deletes landed with {raced} DuckDB snapshots between "
          f"plan and commit; {len(race_result['errors'])} DuckDB inserts lost to a conflict")
    # and one race for certain: DuckDB commits an insert between our plan and our commit
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    before_commit(monkeypatch, lambda: duck.execute(
        f"INSERT INTO lake.{SCHEMA}.race VALUES (300000, 'duckdb')"))
    assert ours_delete(lake, race, 99) == 1
    deleted.append(99)

    reader.stop.set()
    thread.join(timeout=600)
    assert not thread.is_alive()
    assert reader.errors == [], reader.errors[:5]

    # ---- every snapshot was read, in both engines, and history reads the same afterwards
    snapshots = lake.snapshots()
    print(f"{len(snapshots)} snapshots, {len(reader.seen)} table versions read by DuckDB, "
          f"{len(reader.spark_read)} also by us")
    assert reader.done == snapshots[-1].snapshot_id
    duck.execute("BEGIN")  # one read transaction: its reads share DuckDB's catalog lookups
    for (name, sid), rows in reader.seen.items():
        assert duck_rows(duck, f'SELECT * FROM lake.{SCHEMA}."{name}" AT (VERSION => {sid})'
                         ) == rows, (name, sid)
    duck.execute("COMMIT")
    for name, sid in sorted(reader.spark_read)[::3]:  # a third of them: Spark reads are slow
        assert spark_rows(lake.read(f"{SCHEMA}.{name}", version=sid)) == \
            reader.seen[(name, sid)], (name, sid)

    # the writers really interleaved: DuckDB committed between dbt's commits
    dbt_snaps = [s.snapshot_id for s in snapshots if s.snapshot_id > start and
                 (s.commit_message or "").startswith("dbt")]
    events_id = lake.catalog.table(SCHEMA, "events_log").table_id
    duck_snaps = [s.snapshot_id for s in snapshots if s.commit_message is None and (
                  f"inserted_into_table:{events_id}" in s.changes or
                  f"inlined_insert:{events_id}" in s.changes)]
    assert len(dbt_snaps) >= 9, dbt_snaps
    assert any(min(dbt_snaps) < s < max(dbt_snaps) for s in duck_snaps), \
        (dbt_snaps, duck_snaps)

    # ---- nothing lost, nothing twice
    def table(name: str) -> list[tuple[Any, ...]]:
        ours = spark_rows(lake.read(f"{SCHEMA}.{name}"))
        assert ours == duck_rows(duck, f"SELECT * FROM lake.{SCHEMA}.{name}"), name
        return ours

    def expect(rows) -> list[tuple[Any, ...]]:  # noqa: ANN001
        return sorted(rows, key=repr)

    assert table("t_numbers") == expect((i, i * 2) for i in range(200))
    assert table("t_small") == expect((i, "r2") for i in range(5))
    assert table("t_customers") == expect((i, f"c{i}") for i in range(12))
    assert table("m_orders") == expect([(i, 1) for i in range(100)] +
                                       [(i, 2) for i in range(100, 250)])
    assert table("m_small") == expect([(0, 1)] + [(i, 2) for i in range(1, 6)])
    assert table("d_orders") == expect([(i, 1) for i in range(20)] +
                                       [(i, 2) for i in range(20, 50)])
    assert table("s_summary") == [(250, 400)]
    assert len(duck_result["committed"]) >= 8
    assert table("events_log") == expect(
        [(r * 1000 + i, "dbt") for r in (1, 2) for i in range(20)] +
        [(i, "duckdb") for i in duck_result["committed"]])
    assert table("race") == expect(
        [(i, "ours") for i in range(100) if i not in deleted] +
        [(i, "duckdb") for i in race_result["committed"] + [300000]])
    duck.close()
    reader.duck.close()

    # no conflict or retry left a file behind
    assert leftovers(lake.catalog) == set()
