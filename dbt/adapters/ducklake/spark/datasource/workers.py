"""Spark's Python workers: the interpreter they run, and what ``format("ducklake")`` costs in
them, call after call.

PySpark runs every call of a Python data source in a Python worker forked from its daemon:
planning a write (each micro-batch), each task, each commit (each micro-batch), each read.
With ``spark.python.worker.reuse`` (the default) the worker is kept for the next call, and
after every call the daemon runs a full garbage collection (``gc.collect()`` in
``pyspark/daemon.py``), which walks every object the worker holds. Once this package, pyarrow
and SQLAlchemy are imported that is about 75,000 objects: 40-100 ms of CPU per call (more
under load), three calls per micro-batch of a streaming write, more than everything the sink
itself does for a 10-row batch.

:func:`settle` freezes what a worker holds after its first calls (``gc.freeze()``): the
collector no longer walks those objects (reference counting still frees them), so the
daemon's collection walks only what later calls created. Only the first
:data:`SETTLING_CALLS` calls freeze: by then the imports, connection pools and caches exist,
and freezing later would keep garbage cycles of each call's objects for good.
"""

from __future__ import annotations

import gc
import os
import sys

# Calls of a reused worker that freeze what it holds (the first imports this package and
# opens the lake; the next ones meet the lazily imported modules and filled caches).
SETTLING_CALLS = 3

_calls = 0


def settle() -> None:
    """Called at the start of each data source call in a worker: freeze what the worker
    holds (everything the daemon's collection after the previous call kept) during the first
    :data:`SETTLING_CALLS` calls. Nothing happens outside a reused PySpark worker (the
    daemon sets ``SPARK_REUSE_WORKER`` there, and only then collects after each call)."""
    global _calls
    if _calls >= SETTLING_CALLS or not os.environ.get("SPARK_REUSE_WORKER"):
        return
    _calls += 1
    gc.freeze()


def use_this_python_for_workers() -> None:
    """Make a local session's Python workers (bucket partition keys, ``format("ducklake")``,
    Python models' UDFs) run this interpreter, which has pyarrow and numpy.

    pyspark takes the workers' interpreter from ``PYSPARK_PYTHON`` when the SparkContext
    starts, else ``python3`` on PATH: for a virtual environment's ``dbt`` run without
    activating it, that is an interpreter without pyarrow (Spark's ``spark.pyspark.python``
    setting does not reach them). A ``PYSPARK_PYTHON`` the user set is kept.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
