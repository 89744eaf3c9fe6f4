"""A streaming query killed while it commits a batch, then restarted from its checkpoint,
leaves every row exactly once.

The writer (``stream_writer.py``) is SIGKILLed (process, JVM and Python workers) inside the
catalog transaction of a batch (before it commits) or right after the commit, before Spark
writes the batch to its commit log (Spark then replays the batch, which must commit
nothing). DuckDB reads the result.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from engine.test_stream_sink import feed, ids, marks
from oracle import assert_same
from reliability.support import REPO, child_env, kill_group, leftovers, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STREAM_WRITER = f"{REPO}/tests/reliability/stream_writer.py"


def start(lake_target, src: str, checkpoint: str, **env: str) -> subprocess.Popen:  # noqa: ANN001
    args = json.dumps({"catalog": lake_target.catalog, "metadata_schema":
                       lake_target.metadata_schema, "src": src, "checkpoint": checkpoint})
    return subprocess.Popen([sys.executable, STREAM_WRITER, args], env=child_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc: subprocess.Popen) -> None:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]


@pytest.mark.parametrize(("phase", "lake_target"), [
    pytest.param("catalog_transaction", "sqlite", id="before_commit-sqlite"),
    pytest.param("batch_committed", "sqlite", id="after_commit-sqlite"),
    pytest.param("catalog_transaction", "postgres", id="before_commit-postgres",
                 marks=pytest.mark.postgres),
    pytest.param("batch_committed", "postgres", id="after_commit-postgres",
                 marks=pytest.mark.postgres),
], indirect=["lake_target"])
def test_sigkill_while_a_batch_commits(spark, lake, lake_target, duck, tmp_path, phase):  # noqa: ANN001
    """N batches of k rows (k = 5 inlined, k = 30 a file) give exactly the N x k rows."""
    table = lake.create_table("main.t", spark.range(0).selectExpr("id", "'' AS label"))
    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    expected = feed(src, 0, 5)
    finish(start(lake_target, src, ck))  # batch 0, undisturbed
    expected += feed(src, 1, 30) + feed(src, 2, 5)

    signal = str(tmp_path / "reached")
    proc = start(lake_target, src, ck, DUCKLAKE_FAULT_PAUSE_AT=phase,
                 DUCKLAKE_FAULT_SIGNAL=signal)
    wait_for(signal, proc, timeout=400)
    kill_group(proc)  # in batch 1
    committed = marks(lake)[-1]
    assert committed == (1 if phase == "batch_committed" else 0)

    finish(start(lake_target, src, ck))  # from the checkpoint
    assert ids(table) == sorted(expected)
    assert [m for m in marks(lake) if m is not None] == [0, 1, 2]
    assert_same(duck, "t", table.read())
    assert duck.execute("SELECT count(*), count(DISTINCT id) FROM lake.t").fetchone() == (
        len(expected), len(expected))
    # a kill before the commit may leave the batch's file as an orphan (cleanup removes it);
    # a replay removes the file it wrote
    assert len(leftovers(lake.catalog)) <= (1 if phase == "catalog_transaction" else 0)
