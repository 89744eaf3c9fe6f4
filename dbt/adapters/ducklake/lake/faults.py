"""Failure injection at the phase boundaries of a write, for the reliability tests only.

A write passes these points, in order:

* ``files_staged``: Spark has written the Parquet files into the staging directory.
* ``files_published``: the files carry their DuckLake names under the table directory; the
  catalog does not know them yet.
* ``catalog_transaction``: the catalog transaction holds the new snapshot row and every other
  row of the commit; only ``COMMIT`` is left.
* ``batch_committed``: a ``format("ducklake")`` write has committed its snapshot, and Spark
  has not yet been told (for a stream: its commit log does not have the batch yet).

A test stops a writer at a point in one of two ways. In another process, it sets
``DUCKLAKE_FAULT_PAUSE_AT=<phase>`` and ``DUCKLAKE_FAULT_SIGNAL=<file>``: the writer creates
the file when it gets there and then waits (for the test to ``SIGKILL`` it). In the same
process, :func:`inject` runs a function at the point, with the catalog connection when there
is one. Outside tests neither is set and :func:`reach` costs one dictionary and one
environment lookup.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PHASES = ("files_staged", "files_published", "catalog_transaction", "batch_committed")
PAUSE_ENV = "DUCKLAKE_FAULT_PAUSE_AT"
SIGNAL_ENV = "DUCKLAKE_FAULT_SIGNAL"
PAUSE_SECONDS = 600.0

_hooks: dict[str, Callable[..., None]] = {}


def reach(phase: str, **context: Any) -> None:
    """Mark that a write got to ``phase``; pauses or runs an injected fault if one is set."""
    hook = _hooks.get(phase)
    if hook is not None:
        hook(**context)
    if os.environ.get(PAUSE_ENV) == phase:
        signal = os.environ.get(SIGNAL_ENV)
        if signal:
            with open(signal, "w") as handle:
                handle.write(str(os.getpid()))
        time.sleep(PAUSE_SECONDS)


@contextmanager
def inject(phase: str, fault: Callable[..., None]) -> Iterator[None]:
    """Run ``fault(**context)`` whenever a write in this process reaches ``phase``."""
    if phase not in PHASES:
        raise ValueError(f"unknown fault phase {phase!r}; phases are {', '.join(PHASES)}")
    _hooks[phase] = fault
    try:
        yield
    finally:
        _hooks.pop(phase, None)


__all__ = ["PHASES", "inject", "reach"]
