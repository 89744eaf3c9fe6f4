"""The driver daemon (``driver_daemon: true``): dbt processes attach, one at a time, to a Spark
driver that an earlier one left running; a second process at once starts its own Spark; a dbt
process killed while its job runs leaves no job behind and commits nothing; the keeper exits
when idle.

Each dbt invocation is a process of its own, as a user's are; DuckDB reads what they built.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SPARK_TEST_CONF
from oracle import duck_rows
from reliability.support import child_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Long enough for the next dbt process to reach its attachment after a use ends (2-8 s from
# start, the slower on a loaded host); the test's last step waits it out.
IDLE_MINUTES = 0.25

PROFILE = """\
daemon:
  target: dev
  outputs:
    dev:
      type: ducklake
      catalog: "{catalog}"
      data_path: "{data_path}"
      schema: main
      threads: 2
      master: "local[2]"
      driver_daemon: true
      driver_daemon_idle_minutes: {idle}
      spark_conf:
{spark_conf}
"""

PROJECT = {
    "dbt_project.yml": "name: daemon\nversion: '1.0'\nprofile: daemon\n",
    "models/base.sql": "{{ config(materialized='table') }}\n"
                       "select id, id % 3 as k from range({{ var('n', 10) }})\n",
    "models/agg.sql": "{{ config(materialized='table') }}\n"
                      "select k, count(*) as n from {{ ref('base') }} group by k\n",
    # a job that runs until it is cancelled (minutes without code generation)
    "models/slow.sql": "{{ config(materialized='table', enabled=var('slow', false)) }}\n"
                       "select sum(id) as s from range(0, 50000000000, 1, 2)\n",
    "models/schema.yml": "version: 2\nmodels:\n  - name: agg\n    columns:\n"
                         "      - name: k\n        data_tests: [unique, not_null]\n",
}


@pytest.fixture
def project(tmp_path: Path, lake_target) -> Path:  # noqa: ANN001
    for name, body in PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "profiles.yml").write_text(PROFILE.format(
        catalog=lake_target.catalog, data_path=lake_target.data_path, idle=IDLE_MINUTES,
        spark_conf="\n".join(f'        {k}: "{v}"' for k, v in SPARK_TEST_CONF.items())))
    return tmp_path


@pytest.fixture
def daemons(tmp_path: Path):  # noqa: ANN201
    """The directory of this test's keepers; any keeper still running is stopped after."""
    path = tmp_path / "daemons"
    yield path
    for server in path.glob("*/server.json"):
        try:
            os.killpg(json.loads(server.read_text())["pid"], signal.SIGKILL)
        except (ProcessLookupError, ValueError, KeyError):
            pass


def dbt(project: Path, daemons: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dbt.cli.main", *args, "--project-dir", str(project),
         "--profiles-dir", str(project)],
        env=child_env(DBT_SEND_ANONYMOUS_USAGE_STATS="false",
                      DUCKLAKE_DRIVER_DAEMON_DIR=str(daemons)),
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run(project: Path, daemons: Path, *args: str) -> str:
    """Run dbt to its end; the lines it wrote to ``dbt.log`` for this invocation."""
    log = project / "logs" / "dbt.log"
    start = log.stat().st_size if log.exists() else 0
    proc = dbt(project, daemons, *args)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:]
    with open(log, errors="replace") as f:
        f.seek(start)
        return f.read()


def keeper(daemons: Path) -> tuple[Path, int]:
    """The one keeper's directory and pid."""
    servers = list(daemons.glob("*/server.json"))
    assert len(servers) == 1, servers
    return servers[0].parent, json.loads(servers[0].read_text())["pid"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def active_jobs(home: Path) -> list[int]:
    """The jobs the keeper's JVM runs, asked through its gateway (as a dbt process would)."""
    from py4j.clientserver import ClientServer, JavaParameters, PythonParameters

    server = json.loads((home / "server.json").read_text())
    gateway = ClientServer(
        java_parameters=JavaParameters(port=server["port"], auth_token=server["secret"]),
        python_parameters=PythonParameters(port=0, eager_load=False))
    try:
        tracker = gateway.jvm.org.apache.spark.SparkContext.getOrCreate().statusTracker()
        return list(tracker.getActiveJobIds())
    finally:
        gateway.close()  # not shutdown(): that would stop the keeper's gateway


def wait(condition, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.25)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_dbt_processes_share_a_warm_driver_one_at_a_time(project, daemons, lake_target,  # noqa: ANN001
                                                          duck) -> None:
    # the first invocation starts the keeper and attaches; the second attaches to the same
    first = run(project, daemons, "build", "--vars", "{n: 10}")
    home, pid = keeper(daemons)
    assert "attached to the driver daemon" in first and alive(pid)
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert oct((home / "server.json").stat().st_mode & 0o777) == "0o600"
    keeper_log = home / "keeper.log"

    def released(uses: int) -> None:
        """Wait until the keeper has seen the lease free for the ``uses``-th time (before the
        next holder takes it: a gap shorter than its poll would merge two uses)."""
        wait(lambda: keeper_log.read_text().count("detached") == uses, 30,
             f"the keeper saw use {uses} end")

    assert duck_rows(duck, "SELECT k, n FROM lake.main.agg ORDER BY k") == \
        [(0, 4), (1, 3), (2, 3)]
    released(1)

    # while another process holds the lease, dbt starts Spark in its own process
    with open(home / "lease", "a+") as lease:
        fcntl.flock(lease, fcntl.LOCK_EX)
        second = run(project, daemons, "run", "-s", "base", "--vars", "{n: 30}")
    assert "in use by another dbt process" in second and "attached" not in second
    assert duck_rows(duck, "SELECT count(*) FROM lake.main.base") == [(30,)]
    released(2)  # this test's hold

    # a dbt process killed while its job runs: the keeper cancels the job; nothing commits
    snapshots = duck_rows(duck, "SELECT count(*) FROM lake.snapshots()")
    proc = dbt(project, daemons, "run", "-s", "slow", "--vars", "{slow: true}")
    wait(lambda: active_jobs(home), 120, "the slow model's job started")
    proc.kill()
    proc.wait()
    released(3)  # the killed process's
    assert "1 job(s) cancelled" in keeper_log.read_text().splitlines()[-1]
    assert active_jobs(home) == []
    duck.execute("DETACH lake")
    duck.execute(lake_target.duckdb_attach)  # DuckDB's view of the lake after others' commits
    assert duck_rows(duck, "SELECT count(*) FROM lake.snapshots()") == snapshots

    # the next build attaches to the same keeper, warm
    last = run(project, daemons, "build", "--vars", "{n: 20}")
    assert f"keeper pid {pid}" in last and keeper(daemons) == (home, pid)
    assert duck_rows(duck, "SELECT k, n FROM lake.main.agg ORDER BY k") == \
        [(0, 7), (1, 7), (2, 6)]

    # no invocation for the idle time: the keeper and its JVM exit
    wait(lambda: not alive(pid), IDLE_MINUTES * 60 + 60, "the idle keeper exited")
    assert not (home / "server.json").exists()
