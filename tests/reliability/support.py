"""Helpers for the reliability tests: writer processes, lake fingerprints, leftover files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from dbt.adapters.ducklake.lake import Catalog

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITER = os.path.join(REPO, "tests", "reliability", "writer.py")


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: this checkout first on the path, this Python."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + os.path.join(REPO, "tests")
    env["PYSPARK_PYTHON"] = sys.executable
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.update(extra)
    return env


def writer_args(lake_target: Any, **write: Any) -> str:
    return json.dumps({
        "catalog": lake_target.catalog, "data_path": lake_target.data_path,
        "metadata_schema": lake_target.metadata_schema, **write,
    })


def start_writer(args: str, prefix: list[str] | None = None, **env: str) -> subprocess.Popen:
    """Start ``writer.py`` in its own process group (with its JVM and Python workers)."""
    return subprocess.Popen(
        [*(prefix or []), sys.executable, WRITER, args], env=child_env(**env),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def run_writer(args: str, prefix: list[str] | None = None, timeout: float = 300,
               check: bool = True, **env: str) -> dict[str, Any]:
    """Run a write to its end: its JSON result, or ``{"crash": stderr}`` when not ``check``."""
    proc = start_writer(args, prefix, **env)
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode and not check:
        return {"crash": err}
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def wait_for(path: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"the writer exited ({proc.returncode}) before the fault "
                                 f"point: {proc.stderr.read()[-3000:] if proc.stderr else ''}")
        if time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError(f"the writer did not reach the fault point in {timeout}s")
        time.sleep(0.1)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the writer, its JVM and its Python workers at once, like a machine failure."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


@dataclass(frozen=True)
class LakeState:
    """What a reader can observe of a lake: its snapshots and every catalog row count."""

    snapshots: tuple[tuple[Any, ...], ...]
    row_counts: tuple[tuple[str, int], ...]


def lake_state(lake: Catalog) -> LakeState:
    tables = ("ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_data_file",
              "ducklake_delete_file", "ducklake_file_column_stats", "ducklake_table_stats",
              "ducklake_table", "ducklake_column", "ducklake_schema_versions")
    with lake.read() as conn:
        counts = tuple((t, conn.execute(text(f"SELECT count(*) FROM {lake.t(t)}")).scalar_one())
                       for t in tables)
        stats = conn.execute(text(
            f"SELECT table_id, record_count, next_row_id, file_size_bytes FROM "
            f"{lake.t('ducklake_table_stats')} ORDER BY table_id")).all()
    snaps = tuple((s.snapshot_id, s.schema_version, s.next_catalog_id, s.next_file_id,
                   s.changes_made) for s in lake.snapshots())
    return LakeState(snaps, counts + tuple(("stats", tuple(r)) for r in stats))  # type: ignore[arg-type]


def files_on_disk(data_path: str) -> set[str]:
    out = set()
    for directory, _, names in os.walk(data_path):
        for name in names:
            out.add(os.path.normpath(os.path.join(directory, name)))
    return out


def referenced_files(lake: Catalog) -> set[str]:
    """Every data and delete file the catalog refers to, at any snapshot, as absolute paths."""
    out = set()
    with lake.read() as conn:
        tables = {}
        for tid, tpath, trel, spath, srel in conn.execute(text(
                f"SELECT DISTINCT t.table_id, t.path, t.path_is_relative, s.path, "
                f"s.path_is_relative FROM {lake.t('ducklake_table')} t JOIN "
                f"{lake.t('ducklake_schema')} s ON s.schema_id = t.schema_id")).all():
            schema_dir = lake.data_path + spath if srel else spath
            tables[tid] = schema_dir + tpath if trel else tpath
        for kind in ("ducklake_data_file", "ducklake_delete_file"):
            for tid, path, rel in conn.execute(text(
                    f"SELECT table_id, path, path_is_relative FROM {lake.t(kind)}")).all():
                out.add(os.path.normpath(tables[tid] + path if rel else path))
    return out


def leftovers(lake: Catalog) -> set[str]:
    """Files under the data path that no snapshot refers to (what orphan cleanup removes)."""
    return files_on_disk(lake.data_path) - referenced_files(lake)
