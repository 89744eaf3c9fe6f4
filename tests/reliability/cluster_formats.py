"""The driver of a cluster application for ``test_cluster.py``: Spark's own entry points into
a lake, ``format("ducklake")``, with their tasks run by a standalone cluster's executors.

Run as ``python cluster_formats.py '<json>'`` (``master``, ``conf``, ``catalog``, ``table``,
``src``, ``checkpoint``, ``umask``). In one application, so that the test starts one driver
JVM: a batch ``append`` and an ``overwrite``, a read at the append's snapshot and a read of
the latest one (each with a filter Spark pushes), then a stream of two micro-batches from
the files in ``src`` and its replay of the last batch. It never calls ``register()`` nor
``SparkLake.open``: the format must register itself (``pyspark_ducklake``). The lake's
Python API is used only to learn the snapshot ids between the steps.

Prints one JSON line: the steps' snapshot ids, what the reads returned and how many rows
their scans handed to Spark, and the batch ids each run of the stream ran.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from spies import scanned_rows

from dbt.adapters.ducklake.lake import Catalog


def session(master: str, conf: dict[str, str]) -> SparkSession:
    builder = SparkSession.builder.master(master).appName("ducklake-cluster-formats")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows(spark: SparkSession, start: int, count: int, prefix: str) -> DataFrame:
    """``count`` rows from ``start`` in two partitions: one task, and one file, per
    executor."""
    return spark.range(start, start + count, numPartitions=2).selectExpr(
        "id", f"concat('{prefix}', id) AS label")


def write(df: DataFrame, args: dict[str, Any], mode: str) -> int:
    """``df.write.format("ducklake")`` in ``mode``; the snapshot it committed."""
    df.write.format("ducklake").option("catalog", args["catalog"]).mode(mode).save(
        args["table"])
    return Catalog.open(args["catalog"], create=False).latest_snapshot().snapshot_id


def read(spark: SparkSession, args: dict[str, Any], where: str,
         snapshot: int | None = None) -> dict[str, Any]:
    """``spark.read.format("ducklake")`` with a pushed filter (and time travel): the rows,
    and the rows the scan handed to Spark (fewer than the table's when files were
    skipped)."""
    reader = spark.read.format("ducklake").option("catalog", args["catalog"])
    if snapshot is not None:
        reader = reader.option("snapshot", str(snapshot))
    df = reader.load(args["table"]).where(where)
    return {"rows": sorted([r.id, r.label] for r in df.collect()),
            "scanned": scanned_rows(df)}


def stream(spark: SparkSession, args: dict[str, Any]) -> list[int]:
    """The files of ``src`` (one per micro-batch) through ``writeStream.format("ducklake")``
    until drained; the batch ids it ran. ``repartition(2)`` spreads a batch over both
    executors."""
    query = (spark.readStream.schema("id long, label string").option("maxFilesPerTrigger", 1)
             .parquet(args["src"]).repartition(2)
             .writeStream.format("ducklake").option("catalog", args["catalog"])
             .option("table", args["table"]).option("checkpointLocation", args["checkpoint"])
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return [p["batchId"] for p in query.recentProgress]


def forget_last_batch(checkpoint: str, batch: int) -> None:
    """Spark's state after a crash between our commit and its commit log: the batch is in
    the offsets but not in the commits, so a restart runs it again."""
    for name in (str(batch), f".{batch}.crc"):
        path = os.path.join(checkpoint, "commits", name)
        if os.path.exists(path):
            os.remove(path)


def main() -> None:
    args = json.loads(sys.argv[1])
    # the files this process and its JVM's Python workers create get this umask's mode, so
    # the test tells them from the executors' (their workers run with other umasks)
    os.umask(args["umask"])
    spark = session(args["master"], args["conf"])
    out: dict[str, Any] = {}
    out["appended"] = write(rows(spark, 0, 1000, "a"), args, "append")
    out["overwritten"] = write(rows(spark, 2000, 600, "o"), args, "overwrite")
    out["at_append"] = read(spark, args, "id >= 500", snapshot=out["appended"])
    out["stream"] = stream(spark, args)
    forget_last_batch(args["checkpoint"], out["stream"][-1])
    out["replay"] = stream(spark, args)
    out["latest"] = read(spark, args, "id < 2100")
    spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
