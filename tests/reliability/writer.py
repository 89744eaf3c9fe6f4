"""A writer process for the reliability tests: one write through the Python API.

Run as ``python writer.py '<json>'``; the JSON names the lake and the write. The tests kill
this process at a phase of the write (``DUCKLAKE_FAULT_PAUSE_AT``) or let it finish and read
the one-line JSON result it prints.
"""

from __future__ import annotations

import json
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from dbt.adapters.ducklake.lake import DuckLakeError
from dbt.adapters.ducklake.spark import SparkLake


def session(master: str) -> SparkSession:
    from conftest import SPARK_TEST_CONF  # the tests' settings (tests/ is on the path)

    builder = SparkSession.builder.master(master).appName("ducklake-reliability-writer")
    for key, value in SPARK_TEST_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows(spark: SparkSession, start: int, count: int, mode: str, signal: str | None):
    """``count`` rows from ``start``, in two partitions; ``mode`` makes writing tasks misbehave.

    ``stall``: the second task signals and then hangs while the first writes its file.
    ``fail_once``: every task's first attempt fails after producing part of its rows.
    """
    df = spark.range(start, start + count, numPartitions=2)
    if mode == "plain":
        return df.selectExpr("id", "concat('row ', id) AS label")

    def misbehave(ids):  # noqa: ANN001, ANN202 - runs on the executor
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if mode == "stall" and ctx.partitionId() == 1:
            time.sleep(3)  # let the first task write its file
            with open(signal, "w") as handle:
                handle.write("stalled")
            time.sleep(600)
        if mode == "fail_once" and ctx.attemptNumber() == 0 and ctx.partitionId() == 0:
            raise RuntimeError("injected failure on the first attempt of a task")
        return ids

    udf = F.pandas_udf(misbehave, LongType())
    return df.select(udf("id").alias("id")).selectExpr("id", "concat('row ', id) AS label")


def write(lake: SparkLake, args: dict, df):  # noqa: ANN001, ANN201
    """The write ``args["op"]`` names: ``append`` (the default); ``replace``, a rebuild whose
    ``label`` column becomes an integer (a new column of the same name); ``create_or_replace``,
    a table in place of a relation of that name (a view), dropped in the same snapshot."""
    op = args.get("op", "append")
    if op == "append":
        return lake.table(args["table"]).append(df)
    if op == "replace":
        narrowed = df.selectExpr("id", "CAST(id AS INT) AS label")
        return lake.table(args["table"]).replace(narrowed)[0]
    if op == "create_or_replace":
        lake.create_table(args["table"], df, or_replace=True)
        return lake.current_snapshot()
    raise ValueError(f"unknown op {op!r}: append, replace, create_or_replace")


def main() -> None:
    args = json.loads(sys.argv[1])
    spark = session(args.get("master", "local[2]"))
    lake = SparkLake.open(spark, args["catalog"], args["data_path"],
                          **({"metadata_schema": args["metadata_schema"]}
                             if args.get("metadata_schema") else {}))
    df = rows(spark, args["start"], args["count"], args.get("mode", "plain"),
              args.get("signal"))
    try:
        snapshot = write(lake, args, df)
    except DuckLakeError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        return
    print(json.dumps({"snapshot_id": snapshot.snapshot_id if snapshot else None}))
    os.environ.pop("DUCKLAKE_FAULT_PAUSE_AT", None)
    lake.close()
    spark.stop()


if __name__ == "__main__":
    main()
