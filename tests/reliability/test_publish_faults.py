"""A process killed while it holds a branch, or while it publishes one, leaves the lake as it
was (or, past COMMIT, published whole): the branch's copy is removable with ``remove_stale``
and its files are orphans that DuckDB's ``ducklake_delete_orphaned_files`` and ours remove."""

from __future__ import annotations

import datetime
import json
import os
import sys

import pytest
from reliability.support import (
    REPO,
    child_env,
    kill_group,
    lake_state,
    leftovers,
    wait_for,
)
from reliability.test_faults import (
    assert_still_writable,
    assert_unchanged,
    duck_orphans,
    ids,
    seeded,
)

from dbt.adapters.ducklake.lake.branch import remove_stale

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PUBLISH_WRITER = os.path.join(REPO, "tests", "reliability", "publish_writer.py")


def start(lake_target, **args: object):  # noqa: ANN001, ANN201 - subprocess.Popen
    import subprocess

    payload = json.dumps({"catalog": lake_target.catalog, "data_path": lake_target.data_path,
                          "metadata_schema": lake_target.metadata_schema, **args})
    return subprocess.Popen([sys.executable, PUBLISH_WRITER, payload], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.parametrize("stop", ["branch", "publish"])
def test_sigkill_during_branch_or_publish(spark, lake, lake_target, duck, stop, tmp_path):  # noqa: ANN001
    table = seeded(spark, lake)
    before, rows_before = lake_state(lake.catalog), ids(table)
    assert leftovers(lake.catalog) == set()
    signal = str(tmp_path / "reached")
    proc = start(lake_target, stop=stop, signal=signal)
    wait_for(signal, proc)
    if lake.catalog.dialect == "sqlite":
        assert len(_sqlite_copies(lake)) == 1
    kill_group(proc)

    assert_unchanged(lake, table, duck, before, rows_before)
    left = leftovers(lake.catalog)
    assert left and left <= duck_orphans(duck)  # DuckDB sees the branch's files as orphans
    dropped = remove_stale(lake.catalog)
    assert len(dropped) == 1
    assert remove_stale(lake.catalog) == []
    if lake.catalog.dialect == "sqlite":
        assert _sqlite_copies(lake) == []
    duck.execute("CALL ducklake_delete_orphaned_files('lake', cleanup_all => true)")
    assert leftovers(lake.catalog) == set()
    assert_unchanged(lake, table, duck, before, rows_before)
    assert_still_writable(spark, table, duck, rows_before)


def test_publish_in_another_process_lands_whole(spark, lake, lake_target, duck):  # noqa: ANN001
    table = seeded(spark, lake)
    before = lake.catalog.latest_snapshot()
    proc = start(lake_target)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    snap = json.loads(out.strip().splitlines()[-1])["snapshot_id"]
    assert snap == before.snapshot_id + 1 == lake.catalog.latest_snapshot().snapshot_id
    assert duck.execute("SELECT count(*) FROM lake.fresh").fetchone() == (300,)
    assert sorted(ids(table)) == sorted([i for i in list(range(100)) + [500, 501]
                                         if i >= 20] + list(range(1000, 1100)))
    assert leftovers(lake.catalog) == set()
    assert remove_stale(lake.catalog) == []
    cleaned = lake.delete_orphaned_files(
        older_than=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1))
    assert cleaned.paths == ()


def _sqlite_copies(lake) -> list[str]:  # noqa: ANN001
    folder = os.path.dirname(lake.catalog.target.sqlite_path)
    return [n for n in os.listdir(folder) if ".branch-" in n]
