"""Soak: many small inlined commits from several processes, then exact counts and RSS.

    python benchmarks/soak.py CATALOG DATA_PATH [--commits 10000] [--writers 4]

Each writer process commits ``commits / writers`` one-row inserts (inlined into the catalog,
as DuckDB inlines them) through the catalog client, retrying lost snapshot races as every
writer does. It prints its RSS every 10% so a leak shows as growth; the parent prints the
final counts. The CI test (tests/reliability/test_soak.py) then flushes the inlined rows to
Parquet with ``SparkLake.flush_inlined_data`` and checks both engines still read them all.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time

from dbt.adapters.ducklake.lake import Catalog, TableRef, Transaction, data_files
from dbt.adapters.ducklake.lake.models import ColumnSpec
from dbt.adapters.ducklake.lake.tables import create_table


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def writer(catalog: str, metadata_schema: str | None, table_id: int, worker: int, count: int,
           out: multiprocessing.Queue) -> None:
    lake = Catalog.open(catalog, metadata_schema=metadata_schema)
    samples = []
    for i in range(count):
        tx = Transaction(lake)
        data_files.insert(tx, TableRef(table_id), inlined_rows=[{"writer": worker, "seq": i}])
        tx.commit(max_retry_count=100, retry_wait_ms=5)
        if i % max(1, count // 10) == 0 or i == count - 1:
            samples.append(round(rss_mb(), 1))
    lake.close()
    out.put((worker, samples))


def soak(catalog: str, data_path: str, commits: int, writers: int,
         metadata_schema: str | None = None) -> dict[str, object]:
    lake = Catalog.open(catalog, data_path, metadata_schema=metadata_schema)
    tx = Transaction(lake)
    create_table(tx, "main", "soak", [ColumnSpec("writer", "int32"), ColumnSpec("seq", "int64")])
    tx.commit()
    table_id = lake.table("main", "soak").table_id
    start_snapshot = lake.latest_snapshot().snapshot_id
    per = commits // writers
    queue: multiprocessing.Queue = multiprocessing.Queue()
    started = time.monotonic()
    procs = [multiprocessing.Process(
        target=writer, args=(catalog, metadata_schema, table_id, w, per, queue))
        for w in range(writers)]
    for p in procs:
        p.start()
    rss = dict(queue.get() for _ in procs)
    for p in procs:
        p.join()
        assert p.exitcode == 0, f"writer exited with {p.exitcode}"
    elapsed = time.monotonic() - started
    snapshots = lake.latest_snapshot().snapshot_id - start_snapshot
    lake.close()
    return {"commits": per * writers, "snapshots": snapshots, "seconds": round(elapsed, 1),
            "commits_per_second": round(per * writers / elapsed, 1), "rss_mb": rss,
            "table_id": table_id}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog")
    parser.add_argument("data_path")
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--metadata-schema", default=None)
    args = parser.parse_args()
    print(json.dumps(soak(args.catalog, args.data_path, args.commits, args.writers,
                          args.metadata_schema)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
