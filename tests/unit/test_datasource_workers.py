"""What ``format("ducklake")`` leaves in Spark's Python workers: the imports a worker pays
for, and the objects the daemon's collection after each call no longer walks."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys

import pytest
from imports import imported_by

from dbt.adapters.ducklake.spark.datasource import workers


def test_the_data_source_imports_no_dbt() -> None:
    """Each Python worker imports the data source; dbt-core would double what it holds."""
    assert imported_by("dbt.adapters.ducklake.spark.datasource", (
        "m.startswith(('dbt.adapters.base', 'dbt_common', 'agate', 'jinja2', 'mashumaro', "
        "'dbt.adapters.ducklake.impl'))")) == []


def test_the_format_lookup_imports_only_the_class() -> None:
    """Spark's lookup of formats imports ``pyspark_ducklake`` in a worker of its own: it needs
    the class, not the catalog client, the façade or pyarrow (0.6 s per worker process)."""
    assert imported_by("pyspark_ducklake", (
        "m.split('.')[0] in ('sqlalchemy', 'pyarrow') or m.startswith(("
        "'dbt.adapters.ducklake.lake.', 'dbt.adapters.ducklake.spark.lake', "
        "'dbt.adapters.ducklake.spark.datasource.')) and not m.endswith('.workers')")) == []


def test_the_packages_names_resolve_on_first_use() -> None:
    import dbt.adapters.ducklake.lake as lake
    import dbt.adapters.ducklake.spark as spark
    import dbt.adapters.ducklake.spark.datasource as datasource
    from dbt.adapters.ducklake.lake.catalog import Catalog
    from dbt.adapters.ducklake.lake.errors import NotFoundError
    from dbt.adapters.ducklake.spark.datasource.sink import LakeStreamWriter

    assert lake.Catalog is Catalog and lake.NotFoundError is NotFoundError
    assert datasource.LakeStreamWriter is LakeStreamWriter
    assert spark.SparkLake.__name__ == "SparkLake"
    for package in (lake, spark, datasource):
        assert all(getattr(package, name) is not None for name in package.__all__)
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            package.Nope  # noqa: B018


def test_dbt_still_finds_the_plugin() -> None:
    import dbt.adapters.ducklake as package

    assert package.Plugin.adapter.type() == "ducklake"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        package.Nope  # noqa: B018


@pytest.fixture
def unfrozen(monkeypatch):  # noqa: ANN001, ANN201
    monkeypatch.setattr(workers, "_calls", 0)
    yield
    gc.unfreeze()


def test_a_reused_worker_freezes_during_its_first_calls() -> None:
    """Run in a fresh interpreter, as a worker is: in a test process other threads (py4j's,
    Spark's) free frozen objects meanwhile, which lowers the freeze count by chance."""
    code = """
import gc, os
os.environ["SPARK_REUSE_WORKER"] = "1"
from dbt.adapters.ducklake.spark.datasource import workers
gc.unfreeze()
counts, held = [], []
for _ in range(workers.SETTLING_CALLS + 2):
    workers.settle()
    counts.append(gc.get_freeze_count())
    held.append([[] for _ in range(100)])  # what a call leaves behind
print(workers.SETTLING_CALLS, *counts)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    calls, counts = int(out[0]), [int(n) for n in out[1:]]
    settling = counts[:calls]
    # each settling call froze what the previous ones left; later calls freeze nothing
    assert settling[0] > 0 and all(b >= a + 100 for a, b in zip(settling, settling[1:]))
    assert counts[calls:] == [settling[-1]] * 2


def test_outside_a_reused_worker_nothing_is_frozen(monkeypatch, unfrozen) -> None:  # noqa: ANN001
    monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)
    gc.unfreeze()
    workers.settle()
    assert gc.get_freeze_count() == 0


def test_spark_finds_the_format_where_its_lookup_can_import_it(monkeypatch,  # noqa: ANN001
                                                               tmp_path) -> None:  # noqa: ANN001
    """``SparkLake`` leaves the registration to Spark's own lookup of ``pyspark_*`` modules
    (which costs a Python process) only where the interpreter that lookup runs can import
    ``pyspark_ducklake``: this one, or another that has it."""
    from dbt.adapters.ducklake.spark.datasource import found_without_registering

    bare = tmp_path / "bare-python"  # an interpreter without this package (-S: no site)
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(0o755)
    missing = str(tmp_path / "no-such-python")
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert found_without_registering()
    monkeypatch.setenv("PYSPARK_PYTHON", str(bare))
    assert not found_without_registering()
    monkeypatch.setenv("PYSPARK_PYTHON", missing)
    assert not found_without_registering()
    same = tmp_path / "same-python"  # this interpreter under another name
    same.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    same.chmod(0o755)
    monkeypatch.setenv("PYSPARK_PYTHON", str(same))
    assert found_without_registering()
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", str(bare))  # Spark's lookup runs it first
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert not found_without_registering()
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert not found_without_registering()  # pyspark_ducklake not importable here


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK") or not os.path.isdir("/proc/self/fd"),
                    reason="TCP_QUICKACK and /proc/self/fd are Linux's")
def test_held_back_acknowledgements_are_sent_at_once() -> None:
    """A worker's connection to the JVM, after request-response calls, is in delayed-ACK
    mode (the kernel reports quick-ACK off); after ``acknowledge_at_once`` it is in quick-ACK
    mode. Unix sockets are not TCP's: not counted."""
    def quickack(sock: socket.socket) -> int:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK)

    with socket.create_server(("127.0.0.1", 0)) as server, \
            socket.create_connection(server.getsockname()) as jvm:
        worker, _ = server.accept()
        with worker:
            for _ in range(5):  # calls: a command, then an answer
                jvm.sendall(b"command")
                worker.recv(64)
                worker.sendall(b"answer")
                jvm.recv(64)
            jvm.sendall(b"next command")
            worker.recv(64)
            assert quickack(worker) == 0  # the ACK of the command is held back
            told = workers.acknowledge_at_once()
            assert quickack(worker) == 1
            assert told >= 2  # the worker's end and the JVM's
            unix = socket.socketpair()
            try:
                assert workers.acknowledge_at_once() == told
            finally:
                for end in unix:
                    end.close()
