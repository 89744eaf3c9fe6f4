"""Quickstart: build a small lake with Spark, time-travel it, and check DuckDB reads it.

Run from the repository root: ``python examples/quickstart.py``. The lake lives in
``lake/`` (a SQLite catalog plus Parquet files); run it again to add more history.
"""

from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import SparkSession  # noqa: E402

from dbt.adapters.ducklake.spark import CommitInfo, SparkLake  # noqa: E402


def main() -> None:
    spark = (SparkSession.builder.master("local[*]").appName("ducklake-quickstart")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    lake = SparkLake.open(spark, "sqlite:///lake/catalog.sqlite", data_path="lake/data/")
    info = CommitInfo(author="quickstart", message="example run")
    orders = lake.create_table(
        "main.orders",
        spark.range(1000).selectExpr(
            "id", "id % 7 AS customer", "round(rand(1) * 100, 2) AS amount"),
        if_not_exists=True, info=info,
    )
    new_order = spark.createDataFrame([(10_000, 1, 9.5)], "id long, customer long, amount double")
    orders.append(new_order, info=info)
    orders.update({"amount": "amount * 2"}, where="customer = 3", info=info)
    orders.delete("amount < 1", info=info)
    for snap in lake.snapshots()[-4:]:
        print(f"snapshot {snap.snapshot_id}: {snap.changes_made} "
              f"({snap.author}: {snap.commit_message})")
    first = lake.snapshots()[1].snapshot_id
    print("rows now:", orders.read().count(), "| rows at snapshot", first, ":",
          orders.read(version=first).count())
    orders.read().groupBy("customer").count().orderBy("customer").show()
    spark.stop()


if __name__ == "__main__":
    main()
