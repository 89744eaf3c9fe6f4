"""Helpers shared by the stream tests (engine and reliability): a file source fed one
Parquet file per micro-batch, and what a lake holds after a stream."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq

FEED_EPOCH_NS = time.time_ns()


def feed(src, index: int, count: int) -> list[int]:  # noqa: ANN001
    """One more source file of ``count`` rows (ids from ``index * 1000``); its ids."""
    ids = list(range(index * 1000, index * 1000 + count))
    os.makedirs(src, exist_ok=True)
    table = pa.table({"id": pa.array(ids, pa.int64()), "label": [f"row {i}" for i in ids]})
    pq.write_table(table, f"{src}/.f{index}.tmp")
    path = f"{src}/f{index:03d}.parquet"
    os.rename(f"{src}/.f{index}.tmp", path)
    # Spark's file source takes files in modification-time order, and files written within
    # the same clock tick tie: a batch must not overtake the one fed before it.
    mtime_ns = FEED_EPOCH_NS + index * 1_000_000_000
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return ids


def ids(table) -> list[int]:  # noqa: ANN001
    return sorted(r[0] for r in table.read().select("id").collect())


def marks(lake) -> list[int | None]:  # noqa: ANN001
    out = []
    for s in lake.snapshots():
        info = json.loads(s.commit_extra_info) if s.commit_extra_info else {}
        out.append(info.get("ducklake_stream", {}).get("batch"))
    return out
