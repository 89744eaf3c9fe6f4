"""Scale-out: ``integration_project`` and ``format("ducklake")`` on a Spark standalone cluster.

The module starts a master and two workers on loopback from the Spark that pyspark ships
(``bin/spark-class``) and runs one cluster application on them (``cluster_app.py``, its driver
in a new process): each application starts a driver JVM and an executor JVM per worker, so
both tests share it (issue 37: CI time). The application first builds the project with
``master: spark://127.0.0.1:<port>`` (``dbt build`` in-process: the adapter creates the
cluster session from the profile), and then, on that session, uses ``format("ducklake")``:
batch writes, reads with time travel and pushed filters, and a stream with a replayed batch.

Meanwhile this process builds the project on ``local[2]``, on the tests' SparkSession; the
first test compares every table of both lakes through DuckDB (each build has its own lake
under a data path that driver and executors share: the local disk). The workers run with
umasks of their own, so each Parquet file's mode says whether an executor or the driver
created it. The module skips, saying why, only when the cluster does not come up on this
machine.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
import pytest
from conftest import SPARK_TEST_CONF, duckdb_connect
from oracle import duck_rows, rows
from reliability.cluster_app import build
from reliability.support import REPO, child_env
from stream_support import feed

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_CLASS = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
PROJECT = Path(REPO) / "integration_project"
# dbt snapshot times and change-feed snapshot ids: set by when a build ran, not by its data
VOLATILE = {"dbt_valid_from", "dbt_valid_to", "dbt_updated_at", "dbt_scd_id", "snapshot_id"}


# Each worker, and so its executors and their Python workers, creates files with a umask of
# its own, and a driver with DRIVER_UMASK: a file's mode tells which of them wrote it.
WORKER_UMASKS = (0o027, 0o077)
DRIVER_UMASK = 0o022


def writer_of(path: Path) -> str:
    """Who created the file at ``path`` (``worker1``, ``worker2``, ``driver``), from its mode:
    pyarrow, like every writer here, creates files with mode 0666 less the umask."""
    modes = {0o666 & ~umask: f"worker{i}" for i, umask in enumerate(WORKER_UMASKS, 1)}
    modes[0o666 & ~DRIVER_UMASK] = "driver"
    mode = stat.S_IMODE(path.stat().st_mode)
    return modes.get(mode, f"unknown (mode {oct(mode)})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_in_log(path: Path, needle: str, count: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(errors="replace").count(needle) >= count:
            return True
        time.sleep(0.5)
    return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[tuple[str, Path]]:  # noqa: ANN001
    """``spark://127.0.0.1:<port>`` of a master with two registered workers, and the
    workers' directory (one subdirectory per application and executor)."""
    base = tmp_path_factory.mktemp("cluster")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    # the master and workers get the tests' short-work JVM (C1 compiler only, serial GC)
    env = child_env(SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(base / "work"),
                    SPARK_LOG_DIR=str(base), SPARK_NO_DAEMONIZE="1",
                    SPARK_DAEMON_JAVA_OPTS=SPARK_TEST_CONF["spark.driver.extraJavaOptions"])
    procs: list[subprocess.Popen] = []
    master_log = base / "master.log"

    def start(log: Path, *args: str, umask: int = -1) -> None:
        handle = open(log, "w")  # noqa: SIM115 - kept open while the process runs
        procs.append(subprocess.Popen([SPARK_CLASS, *args], env=env, stdout=handle,
                                      stderr=subprocess.STDOUT, start_new_session=True,
                                      umask=umask))

    try:
        start(master_log, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", str(free_port()))
        if not wait_in_log(master_log, "I have been elected leader", 1, 120):
            pytest.skip("the Spark standalone master did not start on this machine: "
                        + master_log.read_text(errors="replace")[-1500:])
        for i, umask in enumerate(WORKER_UMASKS, 1):
            start(base / f"worker{i}.log", "org.apache.spark.deploy.worker.Worker",
                  "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                  "--webui-port", str(free_port()), url, umask=umask)
        if not wait_in_log(master_log, "Registering worker", 2, 120):
            pytest.skip("the Spark standalone workers did not register on this machine: "
                        + master_log.read_text(errors="replace")[-1500:])
        yield url, base / "work"
    finally:
        for proc in procs:  # only the processes this fixture started, by their group
            try:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, 9)


PROFILE = """\
ducklake_shop:
  target: dev
  outputs:
    dev:
      type: ducklake
      catalog: sqlite:///{lake}/catalog.sqlite
      data_path: {lake}/data/
      schema: shop
      threads: 2
      master: "{master}"
      spark_conf:
{conf}
"""


def project_for(tmp: Path, name: str, master: str, conf: dict[str, str]) -> tuple[Path, Path]:
    """A copy of the project with a profile for ``master``; returns it and its lake directory."""
    project = tmp / name
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("lake", "target", "logs"))
    lake = tmp / f"{name}-lake"
    lines = "\n".join(f"        {k}: \"{v}\"" for k, v in conf.items()) or "        {}"
    (project / "profiles.yml").write_text(PROFILE.format(lake=lake, master=master, conf=lines))
    return project, lake


def cluster_conf() -> dict[str, str]:
    """The cluster application's settings (its profile's ``spark_conf``): two executors of
    one core, and the tests' JVM."""
    return {
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.driver.host": "127.0.0.1",
        "spark.sql.shuffle.partitions": "4",
        # executors run Python (UDFs, Python models) with this interpreter and package
        "spark.executorEnv.PYTHONPATH": REPO,
        "spark.pyspark.python": sys.executable,
        # the tests' JVM and code generation settings, on the executors too; adaptive query
        # execution stays on (Spark's default, off in the other tests), so the same project
        # is built both ways and must give the same lake
        **{k: v for k, v in SPARK_TEST_CONF.items() if k not in (
            "spark.driver.memory", "spark.default.parallelism", "spark.sql.shuffle.partitions",
            "spark.sql.adaptive.enabled")},
        "spark.executor.extraJavaOptions": SPARK_TEST_CONF["spark.driver.extraJavaOptions"],
        # the first job waits for both executors, so that the format steps' first write puts
        # one of its two files on each
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "600s",
        # what register() sets (the adapter calls it): reads skip the files that Spark's
        # pushed filters rule out
        "spark.sql.python.filterPushdown.enabled": "true",
    }


def create_events(lake: Path) -> tuple[str, int, int]:
    """A new lake with an empty table ``main.events``, through the lake's Python API (no
    Spark: the format steps create no table of their own); its catalog string, the snapshot
    that created the table and the table's id."""
    from dbt.adapters.ducklake.lake import Catalog, ColumnSpec, Transaction, tables

    catalog = f"sqlite:///{lake}/catalog.sqlite"
    opened = Catalog.open(catalog, f"{lake}/data/")
    tx = Transaction(opened)
    tables.create_table(tx, "main", "events", [ColumnSpec("id", "int64"),
                                               ColumnSpec("label", "varchar")])
    created = tx.commit().snapshot_id
    table_id = opened.table("main", "events").table_id
    opened.close()
    return catalog, created, table_id


@dataclass
class Application:
    """What the module's cluster application and, beside it, the local reference build left."""

    url: str  # the cluster's master
    work: Path  # the workers' directory: one subdirectory per application and executor
    result: dict[str, Any]  # cluster_app.py's result
    output: str  # its console output (dbt's lines, Spark's errors)
    on_cluster: Path  # the lake the cluster build built
    local: Path  # the lake the local build built
    local_error: str | None  # why the local build failed
    lake: Path  # the format steps' lake
    created: int  # the snapshot that created its table
    table_id: int
    checkpoint: Path  # the stream's
    fed: list[int]  # the ids of the stream's source files, in order


@pytest.fixture(scope="module")
def application(cluster, spark, tmp_path_factory) -> Application:  # noqa: ANN001
    """One cluster application for both tests (``cluster_app.py``, its driver in a new
    process, as a user's ``dbt build`` would be): a second would start three more JVMs. It
    builds the project and then runs the format steps; meanwhile this process builds the
    reference on ``local[2]``, on the tests' SparkSession (no JVM of its own to start, and one
    that earlier tests have warmed up)."""
    url, work = cluster
    tmp = tmp_path_factory.mktemp("application")
    cluster_project, on_cluster = project_for(tmp, "cluster", url, cluster_conf())
    # the reference: the tests' SparkSession is local[2] with SPARK_TEST_CONF, as the profile says
    local_project, local = project_for(tmp, "local", "local[2]", SPARK_TEST_CONF)
    lake = tmp / "lake"
    catalog, created, table_id = create_events(lake)
    src, checkpoint = tmp / "src", tmp / "checkpoint"
    small = feed(str(src), 5, 3)  # batch 0: within the inlining limit (10 rows)
    big = feed(str(src), 6, 40)  # batch 1: 20 rows in each of two tasks, a file each
    result = tmp / "result.json"
    args = {"project": str(cluster_project), "result": str(result), "umask": DRIVER_UMASK,
            "catalog": catalog, "table": "main.events", "src": str(src),
            "checkpoint": str(checkpoint)}
    out = tmp / "app.out"
    with open(out, "w") as handle:
        proc = subprocess.Popen(
            [sys.executable, str(Path(REPO) / "tests" / "reliability" / "cluster_app.py"),
             json.dumps(args)],
            stdout=handle, stderr=subprocess.STDOUT, env=child_env(), start_new_session=True)
    try:
        here = build(str(local_project))  # the adapter joins this process's SparkSession
        local_error = None if here["success"] else (
            f"local dbt build failed: {here['exception']}\n" + "\n".join(here["failures"]))
        proc.wait(timeout=1500)
    finally:
        if proc.poll() is None:  # the local build raised, or the application timed out
            os.killpg(proc.pid, 9)
            proc.wait()
    output = out.read_text(errors="replace")
    assert proc.returncode == 0 and result.exists(), output[-4000:]
    return Application(url, work, json.loads(result.read_text()), output, on_cluster, local,
                       local_error, lake, created, table_id, checkpoint, small + big)


def test_integration_project_on_a_cluster_equals_the_local_run(application):  # noqa: ANN001
    """``dbt build`` of the project in the cluster application (the adapter creates the
    cluster session from the profile, as the ``dbt`` command would) gives, table by table,
    what the local build gives."""
    app = application
    build = app.result["build"]
    assert build["success"], (f"cluster dbt build failed: {build['exception']}\n"
                              + "\n".join(build["failures"]) + "\n" + app.output[-4000:])
    assert app.result["master"] == app.url
    assert app.local_error is None, app.local_error
    work, on_cluster, local = app.work, app.on_cluster, app.local
    executors = [p for p in work.glob("app-*/*") if p.is_dir()]
    assert len(executors) >= 2, f"the build did not run executors on both workers: {executors}"
    duck = duckdb_connect()
    for alias, lake in (("c", on_cluster), ("l", local)):
        duck.execute(f"ATTACH 'ducklake:sqlite:{lake}/catalog.sqlite' AS {alias} "
                     f"(DATA_PATH '{lake}/data/')")
    tables = duck.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'l' "
        "ORDER BY ALL").fetchall()
    assert len(tables) >= 8, tables
    cluster_tables = duck.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'c' "
        "ORDER BY ALL").fetchall()
    assert cluster_tables == tables
    for schema, table in tables:
        name = f'"{schema}"."{table}"'
        # Columns that record when or in which snapshot a build ran differ between two builds.
        columns = ", ".join(f'"{c}"' for (c,) in duck.execute(
            f"SELECT column_name FROM (DESCRIBE l.{name})").fetchall() if c not in VOLATILE)
        assert duck_rows(duck, f"SELECT {columns} FROM c.{name}") == \
            duck_rows(duck, f"SELECT {columns} FROM l.{name}"), name
    # the executors wrote Parquet files (not only inlined rows) into the shared data path
    files = duck.execute("SELECT count(*) FROM __ducklake_metadata_c.main.ducklake_data_file"
                         ).fetchone()[0]
    assert files > 0


def test_format_ducklake_on_a_cluster_runs_its_tasks_on_the_executors(application):  # noqa: ANN001
    """``df.write``, ``spark.read`` and ``writeStream`` with ``format("ducklake")`` on the
    cluster session the build left: the executors' Python workers run the tasks and write
    the Parquet files (told apart by their workers' umasks), the commits on the driver write
    none, and DuckDB reads exactly the rows each step wrote, at each snapshot. (The adapter
    registered the format on that session; that the format registers itself without
    ``register`` is shown by every writer process of
    ``tests/reliability/test_stream_faults.py``, which never calls it.)"""
    app = application
    assert "formats_error" not in app.result, app.result["formats_error"]
    assert app.result["master"] == app.url
    got = app.result["formats"]
    lake, created, table_id, checkpoint = app.lake, app.created, app.table_id, app.checkpoint
    duck = duckdb_connect()
    duck.execute(f"ATTACH 'ducklake:sqlite:{lake}/catalog.sqlite' AS lake "
                 f"(DATA_PATH '{lake}/data/')")
    meta = "__ducklake_metadata_lake.main"
    appended, overwritten = got["appended"], got["overwritten"]
    batch0, batch1 = overwritten + 1, overwritten + 2
    # one snapshot per step; the replay of batch 1 committed nothing
    assert got["stream"] == [0, 1] and got["replay"] == [1], got
    changes = duck.execute(
        f"SELECT snapshot_id, changes_made, commit_extra_info FROM {meta}."
        f"ducklake_snapshot_changes WHERE snapshot_id > {created} ORDER BY snapshot_id"
    ).fetchall()
    assert [(c[0], c[1]) for c in changes] == [
        (appended, f"inserted_into_table:{table_id}"),
        (overwritten, f"inserted_into_table:{table_id},deleted_from_table:{table_id}"),
        (batch0, f"inlined_insert:{table_id}"),
        (batch1, f"inserted_into_table:{table_id}")], changes
    for (_, _, extra), batch in zip(changes[2:], (0, 1)):
        assert json.loads(extra)["ducklake_stream"] == {
            "batch": batch, "id": str(checkpoint), "table_id": table_id}, extra

    # the rows, at the append's snapshot and at the end; the application's reads agree
    def at(version: int, where: str = "true") -> list[tuple[Any, ...]]:
        return duck_rows(duck, f"SELECT id, label FROM lake.main.events AT (VERSION => "
                               f"{version}) WHERE {where}")

    assert at(appended) == rows([(i, f"a{i}") for i in range(1000)])
    assert at(batch1) == rows([(i, f"o{i}") for i in range(2000, 2600)]
                              + [(i, f"row {i}") for i in app.fed])
    assert rows(got["at_append"]["rows"]) == at(appended, "id >= 500") == \
        rows([(i, f"a{i}") for i in range(500, 1000)])
    assert rows(got["latest"]["rows"]) == at(batch1, "id < 2100") == \
        rows([(i, f"o{i}") for i in range(2000, 2100)])
    # the pushed filters skipped files: at the append, the file of ids 0-499; at the end,
    # the overwrite's file of 2300-2599 and the stream's files (the 3 inlined rows are read)
    assert got["at_append"]["scanned"] == [500]
    assert got["latest"]["scanned"] == [300 + 3]

    # every Parquet file on disk is registered (the replay's files were removed), and each
    # was created by an executor: the append's two by one executor each
    files = duck.execute(f"SELECT begin_snapshot, path FROM {meta}.ducklake_data_file"
                         ).fetchall()
    on_disk = {p.name: p for p in (lake / "data").rglob("*.parquet")}
    assert sorted(on_disk) == sorted(os.path.basename(path) for _, path in files)
    writers: dict[int, list[str]] = {}
    for snapshot, path in files:
        writers.setdefault(snapshot, []).append(writer_of(on_disk[os.path.basename(path)]))
    assert sorted(writers) == [appended, overwritten, batch1], writers
    assert sorted(writers[appended]) == ["worker1", "worker2"], writers
    assert all(len(w) == 2 and set(w) <= {"worker1", "worker2"}
               for w in writers.values()), writers
