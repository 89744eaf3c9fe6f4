"""Atomic publish (``publish: atomic``): a whole dbt build lands as one snapshot, and only if
no node failed; on SQLite and PostgreSQL catalogs, with DuckDB as the reader and the oracle.

One project (a seed, a view, a table, an incremental model of each strategy, a snapshot, a
Python model, a model over a source DuckDB writes, and a data test) is built per model into
one schema (the environment variable overriding the profile's ``atomic``),
then atomically into another: a failing test and a failing model publish nothing while a
DuckDB reader polls, two passing builds publish exactly one snapshot each, equal to the
per-model build (the second one turns the view into a table, adds a column, merges and
records snapshot changes), while DuckDB appends to the source and inserts into two
incremental models' tables (re-planned at publish); the first drops a dead process's stale
branch; maintenance is refused; and a DuckDB write to a model's table during a build fails
its publish cleanly.
"""

from __future__ import annotations

import glob
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import (
    postgres_profile_target,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture
from dbt_common.exceptions import DbtRuntimeError
from duckdb_process import Loop
from oracle import duck_rows, duckdb_connect
from sqlalchemy import text

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark]

SEED = "id,customer,amount\n1,ann,10\n2,bob,20\n3,cid,30\n4,ann,40\n"
# the second round turns the view into a table and adds a column to a table
STG = """{{ config(materialized='view' if var('round', 1) == 1 else 'table', event_time='ts') }}
select *, cast(date_add(date'2024-01-01', cast(id as int)) as timestamp) as ts
from {{ ref('raw_orders') }}"""
ORDERS = """{{ config(materialized='table') }}
select id, customer, amount * {{ var('factor', 2) }} as amount2
       {%- if var('round', 1) > 1 %}, amount as amount1{% endif %}
from {{ ref('stg_orders') }}"""
ORDERS_INC = """{{ config(materialized='incremental', unique_key='id',
                          incremental_strategy='merge') }}
select id, customer, amount2 + {{ var('round', 1) }} as amount3 from {{ ref('orders') }}"""
# the other incremental strategies (merge is orders_inc's)
ORDERS_DI = """{{ config(materialized='incremental', unique_key='id',
                          incremental_strategy='delete+insert') }}
select id, customer, amount2 + {{ var('round', 1) }} * 10 as amount4 from {{ ref('orders') }}"""
ORDERS_APPEND = """{{ config(materialized='incremental', incremental_strategy='append') }}
select id, {{ var('round', 1) }} as round from {{ ref('orders') }}"""
ORDERS_IO = """{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
                          partition_by=['customer']) }}
select customer, sum(amount2) as total from {{ ref('orders') }} group by customer"""
# microbatch: dbt filters its input, stg_orders (event_time ts, one day per order), to each
# day's window; every batch is a REPLACE WHERE on the table. The window is fixed by
# DBT_EVENT_TIME_START/END (MICROBATCH_WINDOW), a few days after `begin`: three batches, and
# the second round replaces them (the rows carry the round).
ORDERS_MB = """{{ config(materialized='incremental', incremental_strategy='microbatch',
                          event_time='ts', begin='2023-12-30', batch_size='day') }}
select id, customer, amount * {{ var('round', 1) }} as amount_r, ts from {{ ref('stg_orders') }}"""
MICROBATCH_WINDOW = {"DBT_EVENT_TIME_START": "2024-01-02", "DBT_EVENT_TIME_END": "2024-01-05"}
EVENTS_COPY = """{{ config(materialized='table') }}
select id from {{ source('ext', 'events') }} where id < 1000"""
# its column is named sum(amount3), as Spark names it: a name the catalog's inlined table
# must take as it is
PYTHON = """def model(dbt, session):
    return dbt.ref("orders_inc").groupBy("customer").agg({"amount3": "sum"})
"""
SOURCES = """version: 2
sources:
  - name: ext
    schema: "{{ target.schema }}"
    tables:
      - name: events
"""
SNAPSHOT = """{% snapshot orders_snap %}
{{ config(target_schema=target.schema, unique_key='id', strategy='check',
          check_cols=['amount3']) }}
select * from {{ ref('orders_inc') }}
{% endsnapshot %}"""
# A model that, when the test asks (ATOMIC_TEST_CONFLICT holds DuckDB's ATTACH statement),
# has DuckDB change `orders` while the build runs: a real conflict for the publish; or
# (ATOMIC_TEST_RACE) insert a row into `orders_inc`, which the build merges into: the
# publish re-plans the MERGE against it.
CONFLICT = """import os


def model(dbt, session):
    from duckdb_process import execute

    lake = f'lake."{dbt.this.schema}"'
    for key, sql in (("ATOMIC_TEST_CONFLICT", "UPDATE {}.orders SET amount2 = -1 WHERE id = 1"),
                     ("ATOMIC_TEST_RACE", "INSERT INTO {}.orders_inc VALUES (99, 'zed', 7)"),
                     ("ATOMIC_TEST_RACE", "INSERT INTO {}.orders_di VALUES (1, 'dup', 0)")):
        attach = os.environ.get(key)
        if attach:
            execute(attach, sql.format(lake))
    return session.range(1)
"""
ADD_EVENT = """{% macro add_event(n) %}
{% do run_query("insert into `" ~ target.schema ~ ".events` values (" ~ n ~ ")") %}
{% endmacro %}"""
TEST = "select * from {{ ref('orders_inc') }} where amount3 < {{ var('min_amount', 0) }}"
# as of the second round (stg_orders a table by then)
TABLES = ("raw_orders", "stg_orders", "orders", "orders_inc", "orders_di", "orders_append",
          "orders_io", "orders_mb", "events_copy", "py_orders")
CATALOG_TABLES = ("ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_schema",
                  "ducklake_table", "ducklake_view", "ducklake_column", "ducklake_data_file",
                  "ducklake_delete_file", "ducklake_table_stats")


class AtomicPublish:
    """The test; subclasses choose the catalog."""

    # DuckDB inserting into the models' tables during the build, beside the DuckDB appender:
    # on SQLite two DuckDB writers lock each other out (README, Limits; the race ran into it
    # for minutes on a loaded machine), so only PostgreSQL runs it. The re-plan itself does
    # not depend on the catalog: tests/engine/test_branch.py races it on both.
    race_inserts = True

    @pytest.fixture(scope="class")
    def dbt_profile_data(self, unique_schema, dbt_profile_target):  # noqa: ANN001, ANN201
        atomic = dict(dbt_profile_target, schema=unique_schema, publish="atomic")
        return {"test": {"outputs": {"default": atomic,
                                     "other": dict(atomic, schema=f"{unique_schema}_pm")},
                         "target": "default"}}

    @pytest.fixture(scope="class")
    def seeds(self):  # noqa: ANN201
        return {"raw_orders.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"stg_orders.sql": STG, "orders.sql": ORDERS, "orders_inc.sql": ORDERS_INC,
                "orders_di.sql": ORDERS_DI, "orders_append.sql": ORDERS_APPEND,
                "orders_io.sql": ORDERS_IO, "orders_mb.sql": ORDERS_MB,
                "events_copy.sql": EVENTS_COPY, "py_orders.py": PYTHON,
                "conflict.py": CONFLICT,
                "sources.yml": SOURCES}

    @pytest.fixture(scope="class")
    def macros(self):  # noqa: ANN201
        return {"add_event.sql": ADD_EVENT}

    @pytest.fixture(scope="class")
    def snapshots(self):  # noqa: ANN201
        return {"orders_snap.sql": SNAPSHOT}

    @pytest.fixture(scope="class")
    def tests(self):  # noqa: ANN201
        return {"amount_at_least.sql": TEST}

    @pytest.fixture(scope="class", autouse=True)
    def microbatch_window(self) -> Iterator[None]:
        """Every invocation of the class (and its child processes) runs the microbatch
        model's batches of MICROBATCH_WINDOW only, not every day from `begin` to today."""
        saved = {k: os.environ.get(k) for k in MICROBATCH_WINDOW}
        os.environ.update(MICROBATCH_WINDOW)
        yield
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    # ------------------------------------------------------------------ helpers
    def creds(self, project) -> Any:  # noqa: ANN001
        """The profile's credentials, read once: dbt registers a new adapter per invocation,
        so a thread asking the project's adapter during a build can find none."""
        if not hasattr(self, "_creds"):
            self._creds = project.adapter.config.credentials
        return self._creds

    def attach(self, project) -> str:  # noqa: ANN001
        """DuckDB's statement attaching the lake as ``lake``."""
        creds = self.creds(project)
        catalog = creds.catalog.replace("sqlite:///", "sqlite:")
        options = f"DATA_PATH '{creds.data_path}'"
        if creds.metadata_schema:
            options += f", METADATA_SCHEMA '{creds.metadata_schema}'"
        return f"ATTACH 'ducklake:{catalog}' AS lake ({options})"

    def duck(self, project) -> Any:  # noqa: ANN001
        con = duckdb_connect()
        con.execute(self.attach(project))
        return con

    def lake_state(self, project) -> tuple[Any, ...]:  # noqa: ANN001
        """The catalog's rows and every file under the data path (and no branch left)."""
        creds = self.creds(project)
        lake = Catalog.open(creds.catalog, metadata_schema=creds.metadata_schema)
        try:
            with lake.read() as conn:
                rows = tuple(tuple(sorted(map(repr, conn.execute(
                    text(f"SELECT * FROM {lake.t(name)}"))))) for name in CATALOG_TABLES)
                if lake.dialect == "sqlite":
                    path = lake.target.sqlite_path
                    branches = glob.glob(f"{os.path.dirname(path)}/.*branch-*")
                else:
                    branches = [r[0] for r in conn.execute(text(
                        "SELECT schema_name FROM information_schema.schemata WHERE "
                        "schema_name LIKE :p"), {"p": f"{creds.metadata_schema}__branch%"})]
            files = tuple(sorted(os.path.join(root, name)
                                 for root, _, names in os.walk(lake.data_path)
                                 for name in names))
            assert branches == [], f"branches left: {branches}"
            return rows, files
        finally:
            lake.close()

    def snapshot_rows(self, con: Any) -> list[tuple[Any, ...]]:
        return con.execute("SELECT snapshot_id, commit_extra_info FROM lake.snapshots() "
                           "ORDER BY snapshot_id").fetchall()

    def contents(self, con: Any, schema: str) -> dict[str, list[tuple[Any, ...]]]:
        out = {t: duck_rows(con, f'SELECT * FROM lake."{schema}"."{t}"') for t in TABLES}
        out["relations"] = duck_rows(
            con, "SELECT table_name, table_type FROM information_schema.tables WHERE "
                 f"table_catalog = 'lake' AND table_schema = '{schema}'")
        out["orders_snap"] = duck_rows(
            con, f'SELECT id, customer, amount3, dbt_valid_to IS NULL FROM '
                 f'lake."{schema}".orders_snap')
        return out

    # ------------------------------------------------------------------ the test
    def test_atomic_publish(self, project):  # noqa: ANN001
        schema, other = project.test_schema, f"{project.test_schema}_pm"
        self.creds(project)
        con = self.duck(project)
        con.execute(f'CREATE SCHEMA IF NOT EXISTS lake."{schema}"')
        con.execute(f'CREATE SCHEMA IF NOT EXISTS lake."{other}"')
        for name in (schema, other):
            con.execute(f'CREATE TABLE lake."{name}".events AS SELECT range AS id FROM range(5)')

        # (5) the environment variable overrides the profile's atomic: one snapshot a write
        before = len(self.snapshot_rows(con))
        os.environ["DUCKLAKE_PUBLISH"] = "per_model"
        try:
            run_dbt(["build", "--target", "other"])
            run_dbt(["build", "--target", "other", "--vars", "{round: 2, factor: 3}"])
        finally:
            del os.environ["DUCKLAKE_PUBLISH"]
        assert len(self.snapshot_rows(con)) - before > 10
        expected = self.contents(con, other)
        assert ("stg_orders", "BASE TABLE") in expected["relations"]
        assert len(expected["orders"][0]) == 4  # amount1 added in the second round
        # the three batches of the window, replaced by the second round's
        assert [(r[0], r[2]) for r in expected["orders_mb"]] == [(1, 20), (2, 40), (3, 60)]

        # (1) + (3) a failing data test publishes nothing, and a reader never sees a thing
        state = self.lake_state(project)
        names, snapshots, stop = self._poll(project)
        _, out = run_dbt_and_capture(["build", "--vars", "{min_amount: 1000}"],
                                     expect_pass=False)
        stop()
        assert "Atomic publish: nothing published" in out
        assert "test.test.amount_at_least ended with status fail" in out
        assert self.lake_state(project) == state
        assert names and {tuple(n or ()) for n in names} == {("events",)}, \
            "a reader saw the build's tables"
        assert snapshots and set(snapshots) == {state[0][0]}, "a reader saw the build's writes"

        # (4) a model error publishes nothing either
        _, out = run_dbt_and_capture(["build", "--vars", "{factor: no_such_column}"],
                                     expect_pass=False)
        assert "ended with status error" in out and "nothing published" in out
        assert self.lake_state(project) == state

        # (2) a passing build publishes exactly one snapshot; its start drops the branch a
        # killed earlier invocation left
        stale = self._stale_branch(project)
        before = self.snapshot_rows(con)
        _, out = run_dbt_and_capture(["build"])
        assert "Atomic publish: dropped 1 branch(es) left by processes that are gone" in out
        assert stale not in self._copies(project)
        after = self.snapshot_rows(con)
        assert len(after) == len(before) + 1
        published = json.loads(after[-1][1])
        assert f"Atomic publish: published snapshot {after[-1][0]}" in out
        assert published["publish"] == "atomic" and published["base_snapshot"] == before[-1][0]
        assert "model.test.orders_inc" in published["nodes"]
        assert "seed.test.raw_orders" in published["nodes"]

        # (6) a second build (every incremental strategy, snapshot changes) while DuckDB
        # appends to the source, and inserts a row into orders_inc, which the build merges
        # into, and one into orders_di, which it deletes+inserts into: both statements are
        # re-planned at publish, as they would run after DuckDB's inserts: the MERGE keeps
        # its row (its id matches no source row), delete+insert replaces the other (id 1)
        appended, stop_appending = self._append(project, schema)
        before = self.snapshot_rows(con)
        if self.race_inserts:
            os.environ["ATOMIC_TEST_RACE"] = self.attach(project)
        try:
            _, out = run_dbt_and_capture(["build", "--vars", "{round: 2, factor: 3}"],
                                         expect_pass=None)
        finally:
            os.environ.pop("ATOMIC_TEST_RACE", None)
            stop_appending()
        assert "Atomic publish: published snapshot" in out, out[-5000:]
        after = self.snapshot_rows(con)
        ours = [s for s in after[len(before):] if s[1] and "ATOMIC PUBLISH" in s[1]]
        assert len(ours) == 1, after[len(before):]
        base = json.loads(ours[0][1])["base_snapshot"]
        assert any(base < s < ours[0][0] for s in appended), "no append during the build"
        if self.race_inserts:
            expected["orders_inc"] = sorted([*expected["orders_inc"], (99, "zed", 7)],
                                            key=repr)
        assert self.contents(con, schema) == expected
        count = con.execute(f'SELECT count(*) FROM lake."{schema}".events').fetchone()[0]
        assert count == 5 + len(appended)

        # maintenance inside an atomic invocation is refused, before it touches anything
        state = self.lake_state(project)
        _, out = run_dbt_and_capture(["run-operation", "ducklake_flush_inlined_data"],
                                     expect_pass=False)
        assert "is refused in an atomic invocation" in out
        assert self.lake_state(project) == state

        # a test alone writes nothing: nothing to publish; run_query in an operation publishes
        before = self.snapshot_rows(con)
        _, out = run_dbt_and_capture(["test"])
        assert "Atomic publish: nothing to publish" in out
        run_dbt(["run-operation", "add_event", "--args", "{n: 2000}"])
        after = self.snapshot_rows(con)
        assert len(after) == len(before) + 1 and "ATOMIC PUBLISH" in after[-1][1]
        assert con.execute(f'SELECT count(*) FROM lake."{schema}".events WHERE id = 2000'
                           ).fetchone()[0] == 1

        # a real conflict (DuckDB updates `orders`, which the build rebuilds) fails the
        # publish: the lake holds DuckDB's update and nothing of the build
        before = self.snapshot_rows(con)
        os.environ["ATOMIC_TEST_CONFLICT"] = self.attach(project)
        try:
            with pytest.raises(DbtRuntimeError, match=r"NOT PUBLISHED: atomic publish failed, "
                                                      r"nothing was published; .*\.orders "
                                                      r"\(id \d+\) was changed by snapshot"):
                run_dbt(["build", "--vars", "{round: 3}"], expect_pass=False)
        finally:
            del os.environ["ATOMIC_TEST_CONFLICT"]
        after = self.snapshot_rows(con)
        assert len(after) == len(before) + 1 and after[-1][1] is None  # DuckDB's only
        expected["orders"] = [(1, "ann", -1, 10) if r[0] == 1 else r
                              for r in expected["orders"]]
        assert self.contents(con, schema) == expected
        self.lake_state(project)  # no branch left
        con.close()

    @pytest.mark.slow
    def test_ctrl_c_publishes_nothing(self, project):  # noqa: ANN001
        """A real Ctrl-C (SIGINT to a `dbt build` process) once the build has staged a write:
        dbt ends the command unsuccessfully, the branch is discarded, the lake is as before."""
        import signal
        import subprocess
        import sys
        import time

        from reliability.support import child_env

        self.creds(project)
        state = self.lake_state(project)
        base = self._catalog_snapshots(project)
        proc = subprocess.Popen(
            [sys.executable, "-m", "dbt.cli.main", "build", "--project-dir",
             project.project_root, "--profiles-dir", project.profiles_dir, "--vars",
             "{round: 5}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=child_env())
        try:
            deadline = time.monotonic() + 600  # a guard against a hang, not a measurement
            while self._branch_snapshots(project) <= len(base):
                assert proc.poll() is None, proc.communicate()[0][-3000:]
                assert time.monotonic() < deadline, "the build staged nothing"
                time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            out = proc.communicate(timeout=600)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode != 0, out[-3000:]
        assert "Atomic publish: nothing published" in out, out[-3000:]
        assert self.lake_state(project) == state

    def _stale_branch(self, project) -> str:  # noqa: ANN001
        """A branch whose owner process is gone (as a SIGKILLed invocation leaves it)."""
        from dbt.adapters.ducklake.lake.branch import OWNER_TABLE, Branch

        creds = self.creds(project)
        lake = Catalog.open(creds.catalog, metadata_schema=creds.metadata_schema)
        try:
            branch = Branch.open(lake)
            table = (OWNER_TABLE if lake.dialect == "sqlite"
                     else f'"{branch.location}".{OWNER_TABLE}')
            with branch.catalog.engine.connect() as conn, conn.begin():
                conn.execute(text(f"UPDATE {table} SET pid = 999999999"))
            branch.catalog.close()
            assert branch.location in self._copies(project)
            return branch.location
        finally:
            lake.close()

    def _copies(self, project) -> list[str]:  # noqa: ANN001
        from dbt.adapters.ducklake.lake.branch import branch_copies

        creds = self.creds(project)
        lake = Catalog.open(creds.catalog, metadata_schema=creds.metadata_schema)
        try:
            return branch_copies(lake)
        finally:
            lake.close()

    def _branch_snapshots(self, project) -> int:  # noqa: ANN001
        """How many snapshots the build's branch holds (0 before it exists)."""
        import sqlite3

        creds = self.creds(project)
        lake = Catalog.open(creds.catalog, metadata_schema=creds.metadata_schema)
        try:
            if lake.dialect == "sqlite":
                path = lake.target.sqlite_path
                for copy in glob.glob(f"{os.path.dirname(path)}/.*branch-*.sqlite"):
                    try:
                        with sqlite3.connect(copy, timeout=1) as conn:
                            return int(conn.execute(
                                "SELECT count(*) FROM ducklake_snapshot").fetchone()[0])
                    except sqlite3.Error:
                        continue  # a copy being made or dropped
                return 0
            with lake.engine.connect() as conn:
                for (schema,) in conn.execute(text(
                        "SELECT schema_name FROM information_schema.schemata WHERE "
                        "schema_name LIKE :p"), {"p": f"{creds.metadata_schema}__branch%"}):
                    try:
                        return int(conn.execute(text(
                            f'SELECT count(*) FROM "{schema}".ducklake_snapshot')).scalar())
                    except Exception:  # noqa: BLE001 - a copy being made or dropped
                        conn.rollback()
                return 0
        finally:
            lake.close()

    def _poll(self, project) -> tuple[list[Any], list[Any], Any]:  # noqa: ANN001
        """Readers polling the lake until stopped: DuckDB (in a process of its own, see
        ``duckdb_process``) the names of the test schema's tables, and this process the
        catalog's snapshots."""
        tables = Loop("tables", self.attach(project), project.test_schema)
        stop, snapshots = threading.Event(), []

        def run() -> None:
            while not stop.is_set():
                snapshots.append(self._catalog_snapshots(project))
                stop.wait(0.2)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        names: list[Any] = []

        def done() -> None:
            _stopper(stop, thread)()
            names.extend(tables.stop())

        return names, snapshots, done

    def _catalog_snapshots(self, project) -> Any:  # noqa: ANN001
        creds = self.creds(project)
        lake = Catalog.open(creds.catalog, metadata_schema=creds.metadata_schema)
        try:
            with lake.read() as conn:
                return tuple(sorted(map(repr, conn.execute(
                    text(f"SELECT * FROM {lake.t('ducklake_snapshot')}")))))
        finally:
            lake.close()

    def _append(self, project, schema: str) -> tuple[list[int], Any]:  # noqa: ANN001
        """DuckDB (in a process of its own) appending to the source table, rows the models
        filter out, until stopped; the snapshot ids of its commits are there once stopped."""
        loop = Loop("append", self.attach(project), f'lake."{schema}".events')
        snapshots: list[int] = []
        return snapshots, lambda: snapshots.extend(loop.stop())


def _stopper(stop: threading.Event, thread: threading.Thread) -> Any:
    """Stop a polling thread and wait until it has finished its last round."""

    def done() -> None:
        stop.set()
        thread.join()

    return done


class TestAtomicPublishSqlite(AtomicPublish):
    race_inserts = False


@pytest.mark.postgres
class TestAtomicPublishPostgres(AtomicPublish):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory) -> Iterator[dict[str, Any]]:  # noqa: ANN001
        yield from postgres_profile_target(tmp_path_factory, threads=4)
