"""Spark's Python workers: the interpreter they run, and what ``format("ducklake")`` costs in
them, call after call.

Every data source call begins with :func:`begin_call`: it acknowledges at once what the JVM
sent (:func:`acknowledge_at_once`) and freezes what the worker holds (:func:`settle`).

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
import socket
import stat
import sys

# Calls of a reused worker that freeze what it holds (the first imports this package and
# opens the lake; the next ones meet the lazily imported modules and filled caches).
SETTLING_CALLS = 3

_calls = 0


def begin_call() -> None:
    """Called at the start of each data source call in a worker."""
    acknowledge_at_once()
    settle()


def acknowledge_at_once() -> int:
    """Make the kernel send now the acknowledgements it holds back on this process's TCP
    sockets (``TCP_QUICKACK``); returns how many sockets were told.

    Spark's JVM talks to a Python worker over a loopback TCP socket without ``TCP_NODELAY``.
    For a task of a write it sends the command, then the rows: Nagle's algorithm holds the
    rows' first small segment until the worker acknowledges the command, and the worker's
    kernel, in delayed-ACK mode after the connection's earlier calls, waits up to 40 ms
    (Linux's minimum delay) for data of its own to carry the ACK. The worker has none: it is
    waiting for the rows. A 10-row micro-batch of the sink waited 40 ms for its rows against
    4 ms of work (docs/streaming.md). Quick-ACK mode does not last (the kernel returns to
    delayed ACKs by its own rules), so each call asks again. Linux only (``/proc/self/fd``,
    ``TCP_QUICKACK``); elsewhere, and for Unix sockets
    (``spark.python.unix.domain.socket.enabled``), nothing is done."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if quickack is None or not os.path.isdir("/proc/self/fd"):
        return 0
    told = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if not stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and \
                    sock.type == socket.SOCK_STREAM:
                sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
                told += 1
        except OSError:
            pass  # a listening socket: nothing is held back
        finally:
            sock.close()
    return told


def settle() -> None:
    """Freeze what the worker holds (everything the daemon's collection after the previous
    call kept) during the first :data:`SETTLING_CALLS` calls. Nothing happens outside a
    reused PySpark worker (the daemon sets ``SPARK_REUSE_WORKER`` there, and only then
    collects after each call)."""
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
