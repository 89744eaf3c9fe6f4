"""Spark's hook for ``format("ducklake")``: PySpark registers the ``DefaultSource`` of every
importable top-level module named ``pyspark_*`` in each session, on its first use of a Python
data source, so no call is needed wherever dbt-ducklake is installed (the driver; executors
only need the package importable to run the tasks)."""

from dbt.adapters.ducklake.spark.datasource import DuckLakeDataSource as DefaultSource

__all__ = ["DefaultSource"]
