"""The driver of ``test_cluster.py``'s one cluster application: a ``dbt build`` whose profile
names the cluster, then Spark's own entry points into a lake, ``format("ducklake")``, with
their tasks run by the same executors.

Each cluster application starts a driver JVM and one executor JVM per worker; one application
for both parts spares CI a second set of three (a minute on two cores, issue 37).

Run as ``python cluster_app.py '<json>'`` (``project``: a dbt project with its
``profiles.yml``; ``result``: the file for the JSON result; ``umask``; and for the format
steps ``catalog``, ``table``, ``src``, ``checkpoint``):

1. ``dbt build`` of ``project`` in this process (``dbtRunner``): the adapter creates the
   cluster session from the profile (``master``, ``spark_conf``), as the ``dbt`` command
   would; its exit status and every failed node go into the result.
2. On that SparkSession: a batch ``append`` and an ``overwrite``, a read at the append's
   snapshot and a read of the latest one (each with a filter Spark pushes), then a stream of
   two micro-batches from the files in ``src`` and its replay of the last batch. The adapter
   has registered the format on this session (``SparkLake`` calls ``register``), so that the
   format registers itself without the call is shown in sessions of their own by the writer
   processes of ``tests/reliability/test_stream_faults.py`` (``stream_writer.py``). The
   lake's Python API is used only to learn the snapshot ids between the steps.

The result holds the build's status, the session's master, and the format steps' snapshot
ids, what the reads returned, how many rows their scans handed to Spark and the batch ids
each run of the stream ran (or the error that stopped them). A part that fails does not stop
the other, so each test reports its own part.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from spies import scanned_rows

from dbt.adapters.ducklake.lake import Catalog


def build(project: str) -> dict[str, Any]:
    """``dbt build`` of ``project`` in this process: whether it succeeded, why not, and the
    nodes that did not pass."""
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(["build", "--project-dir", project, "--profiles-dir", project])
    failures = [f"{r.node.unique_id}: {r.status} {r.message}"
                for r in getattr(result.result, "results", None) or []
                if str(r.status) not in ("success", "pass")]
    return {"success": bool(result.success),
            "exception": None if result.exception is None else repr(result.exception),
            "failures": failures}


def build_session() -> tuple[SparkSession | None, bool]:
    """The SparkSession the build's adapter created (None when the build started none: a new
    local session here would run the format steps off the cluster), and whether it already
    was this thread's active session on the JVM side.

    It is made this thread's active session there, as pyspark's ``createDataFrame`` does:
    Spark looks Python data sources up in the calling thread's active session only, and one
    set in another thread (dbt's) does not count, so ``ducklake`` would not be found
    (``DATA_SOURCE_NOT_FOUND``) although the adapter registered it."""
    if SparkContext._active_spark_context is None:  # noqa: SLF001 - pyspark's only record
        return None, False
    spark = SparkSession.builder.getOrCreate()
    jvm_session = SparkSession._get_j_spark_session_class(spark._jvm)  # noqa: SLF001
    was_active = bool(jvm_session.getActiveSession().isDefined())
    jvm_session.setActiveSession(spark._jsparkSession)  # noqa: SLF001
    return spark, was_active


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


def formats(spark: SparkSession, args: dict[str, Any]) -> dict[str, Any]:
    """The ``format("ducklake")`` steps, in order; what each returned."""
    out: dict[str, Any] = {}
    out["appended"] = write(rows(spark, 0, 1000, "a"), args, "append")
    out["overwritten"] = write(rows(spark, 2000, 600, "o"), args, "overwrite")
    out["at_append"] = read(spark, args, "id >= 500", snapshot=out["appended"])
    out["stream"] = stream(spark, args)
    forget_last_batch(args["checkpoint"], out["stream"][-1])
    out["replay"] = stream(spark, args)
    out["latest"] = read(spark, args, "id < 2100")
    return out


def main() -> None:
    args = json.loads(sys.argv[1])
    # the files this process and its JVM's Python workers create get this umask's mode, so
    # the test tells them from the executors' (their workers run with other umasks)
    os.umask(args["umask"])
    result: dict[str, Any] = {"build": build(args["project"])}
    spark, result["was_active"] = build_session()
    if spark is None:
        result["formats_error"] = "the dbt build started no SparkSession"
    else:
        result["master"] = spark.sparkContext.master
        try:
            result["formats"] = formats(spark, args)
        except Exception:  # noqa: BLE001 - reported to the test, which fails on it
            result["formats_error"] = traceback.format_exc()
        spark.stop()
    with open(args["result"], "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
