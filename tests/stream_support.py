"""Helpers shared by the stream tests (engine and reliability): a file source fed one
Parquet file per micro-batch, and what a lake holds after a stream."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq


def feed(src, index: int, count: int) -> list[int]:  # noqa: ANN001
    """One more source file of ``count`` rows (ids from ``index * 1000``); its ids."""
    ids = list(range(index * 1000, index * 1000 + count))
    os.makedirs(src, exist_ok=True)
    table = pa.table({"id": pa.array(ids, pa.int64()), "label": [f"row {i}" for i in ids]})
    pq.write_table(table, f"{src}/.f{index}.tmp")
    os.rename(f"{src}/.f{index}.tmp", f"{src}/f{index:03d}.parquet")
    return ids


def ids(table) -> list[int]:  # noqa: ANN001
    return sorted(r[0] for r in table.read().select("id").collect())


def marks(lake) -> list[int | None]:  # noqa: ANN001
    out = []
    for s in lake.snapshots():
        info = json.loads(s.commit_extra_info) if s.commit_extra_info else {}
        out.append(info.get("ducklake_stream", {}).get("batch"))
    return out
