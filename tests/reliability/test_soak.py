"""Soak in CI: 300 one-row inlined commits from three processes (``benchmarks/soak.py`` runs
10,000); every commit lands once, DuckDB agrees, the writers' memory stays flat, and flushing
the inlined rows to Parquet changes nothing either engine reads."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from reliability.support import REPO, child_env

pytestmark = [pytest.mark.slow]


def test_small_commits_from_several_processes(spark, lake_target, duck):  # noqa: ANN001
    proc = subprocess.run(
        [sys.executable, f"{REPO}/benchmarks/soak.py", lake_target.catalog,
         lake_target.data_path, "--commits", "300", "--writers", "3",
         *(["--metadata-schema", lake_target.metadata_schema]
           if lake_target.metadata_schema else [])],
        capture_output=True, text=True, env=child_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("soak:", result)
    assert result["snapshots"] == 300
    rows = duck.execute("SELECT writer, count(*), count(DISTINCT seq), min(seq), max(seq) "
                        "FROM lake.soak GROUP BY writer ORDER BY writer").fetchall()
    assert rows == [(w, 100, 100, 0, 99) for w in range(3)]
    for samples in result["rss_mb"].values():
        assert max(samples[2:]) - samples[2] < 20, samples  # MB, after warm-up

    from dbt.adapters.ducklake.spark import SparkLake

    lake = SparkLake.open(spark, lake_target.catalog, lake_target.data_path,
                          **lake_target.open_kwargs())
    try:
        flushed = lake.flush_inlined_data("main", "soak")
        assert flushed.rows_flushed == 300
        ours = sorted(tuple(r) for r in lake.table("main.soak").read().collect())
    finally:
        lake.close()
    assert ours == [(w, s) for w in range(3) for s in range(100)]
    assert duck.execute("SELECT count(*), count(DISTINCT (writer, seq)) FROM lake.soak"
                        ).fetchone() == (300, 300)
    files = duck.execute("SELECT count(*) FROM ducklake_list_files('lake', 'soak')").fetchone()
    assert files[0] >= 1
