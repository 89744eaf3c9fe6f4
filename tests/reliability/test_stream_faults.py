"""A streaming query killed while it commits a batch, then restarted from its checkpoint,
leaves every row exactly once.

The writer (``stream_writer.py``) is SIGKILLed (process, JVM and Python workers) right after
a batch commits, before Spark writes the batch to its commit log (Spark then replays the
batch, which must commit nothing), and inside the catalog transaction of the next batch
(before it commits): both in one stream per catalog, three writer runs in all. DuckDB reads
the result.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from oracle import assert_same
from reliability.support import REPO, child_env, kill_group, leftovers, wait_for
from stream_support import feed, ids, marks

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


def kill_at(lake_target, src: str, ck: str, phase: str, tmp_path) -> None:  # noqa: ANN001
    """Run the stream until a batch reaches ``phase``, then SIGKILL it (process, JVM and
    Python workers)."""
    signal = str(tmp_path / f"reached-{phase}")
    proc = start(lake_target, src, ck, DUCKLAKE_FAULT_PAUSE_AT=phase,
                 DUCKLAKE_FAULT_SIGNAL=signal)
    wait_for(signal, proc, timeout=400)
    kill_group(proc)


@pytest.mark.parametrize("lake_target", [
    "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_sigkill_while_batches_commit(spark, lake, lake_target, duck, tmp_path):  # noqa: ANN001
    """N batches of k rows (k = 5 inlined, k = 30 a file) give exactly the N x k rows.

    One stream is killed twice: right after batch 0 commits (before Spark's commit log has
    it: the next run replays it, which must commit nothing; a replay never reaches the
    catalog transaction), then inside batch 1's catalog transaction (before its commit:
    nothing of it may land). One restart then drains the source from the checkpoint."""
    table = lake.create_table("main.t", spark.range(0).selectExpr("id", "'' AS label"))
    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    expected = feed(src, 0, 5) + feed(src, 1, 30) + feed(src, 2, 5)

    kill_at(lake_target, src, ck, "batch_committed", tmp_path)
    assert [m for m in marks(lake) if m is not None] == [0]
    kill_at(lake_target, src, ck, "catalog_transaction", tmp_path)  # in batch 1
    assert [m for m in marks(lake) if m is not None] == [0]

    finish(start(lake_target, src, ck))  # from the checkpoint
    assert ids(table) == sorted(expected)
    assert [m for m in marks(lake) if m is not None] == [0, 1, 2]
    assert_same(duck, "t", table.read())
    assert duck.execute("SELECT count(*), count(DISTINCT id) FROM lake.t").fetchone() == (
        len(expected), len(expected))
    # the kill before batch 1's commit may leave its file as an orphan (cleanup removes
    # it); the replay of batch 0 removed what it wrote
    assert len(leftovers(lake.catalog)) <= 1
