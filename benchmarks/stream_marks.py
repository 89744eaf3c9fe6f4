"""What the exactly-once check of a streaming batch costs as the lake's history grows.

Every ``format("ducklake")`` batch and every write given a ``stream_id`` looks up the
stream's latest mark (:func:`dbt.adapters.ducklake.lake.streams.last_batch`), inside its
commit's catalog transaction: a ``LIKE`` over ``ducklake_snapshot_changes.commit_extra_info``,
newest snapshot first. This fills a fresh lake with ``--snapshots`` snapshot rows (each with a
commit_extra_info like a dbt run's or another stream's) and times the lookup of a stream
whose mark is the newest snapshot, the oldest, and of a stream that has none (a new stream:
the whole scan).

    python benchmarks/stream_marks.py sqlite:///tmp/marks/c.sqlite /tmp/marks/data/ \\
        --snapshots 10000
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from sqlalchemy import text

from dbt.adapters.ducklake.lake import Catalog
from dbt.adapters.ducklake.lake.streams import last_batch


def fill(lake: Catalog, count: int) -> None:
    with lake.write() as conn:
        first = lake.latest_snapshot(conn).snapshot_id + 1
        now = lake.encode_time(lake.latest_snapshot(conn).snapshot_time)
        snaps, changes = [], []
        for sid in range(first, first + count):
            if sid == first:
                extra = {"ducklake_stream": {"batch": 0, "id": "/ck/old-stream", "table_id": 1}}
            elif sid == first + count - 1:
                extra = {"ducklake_stream": {"batch": 9, "id": "/ck/new-stream", "table_id": 1}}
            elif sid % 2:
                extra = {"ducklake_stream": {"batch": sid, "id": f"/ck/other-{sid % 7}",
                                             "table_id": 1}}
            else:
                extra = {"dbt": {"invocation_id": "0f8e-" + str(sid),
                                 "node": "model.shop.orders"}}
            snaps.append({"s": sid, "t": now, "v": 1, "c": 2, "f": 0})
            changes.append({"s": sid, "c": "inlined_insert:1", "a": None, "m": None,
                            "x": json.dumps(extra, sort_keys=True)})
        conn.execute(text(f"INSERT INTO {lake.t('ducklake_snapshot')} VALUES "
                          "(:s, :t, :v, :c, :f)"), snaps)
        conn.execute(text(f"INSERT INTO {lake.t('ducklake_snapshot_changes')} VALUES "
                          "(:s, :c, :a, :m, :x)"), changes)


def timed(lake: Catalog, stream_id: str, repeat: int = 20) -> float:
    times = []
    for _ in range(repeat):
        with lake.read() as conn:
            start = time.perf_counter()
            last_batch(lake, conn, stream_id, 1)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog")
    parser.add_argument("data_path")
    parser.add_argument("--snapshots", type=int, default=10_000)
    parser.add_argument("--metadata-schema")
    args = parser.parse_args()
    lake = Catalog.open(args.catalog, args.data_path, metadata_schema=args.metadata_schema)
    fill(lake, args.snapshots)
    for label, stream in (("mark in the newest snapshot", "/ck/new-stream"),
                          ("mark in the oldest snapshot", "/ck/old-stream"),
                          ("no mark (a new stream)", "/ck/none")):
        print(f"{args.snapshots} snapshots, {label}: {timed(lake, stream):.2f} ms (median)")


if __name__ == "__main__":
    main()
