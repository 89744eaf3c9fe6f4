"""Engine fixtures: a SparkLake over the test's lake (SQLite or PostgreSQL catalog)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark import SparkLake


@pytest.fixture
def lake(spark, lake_target):  # noqa: ANN001, ANN201
    lk = SparkLake.open(spark, lake_target.catalog, lake_target.data_path,
                        **lake_target.open_kwargs())
    yield lk
    lk.close()


@pytest.fixture(autouse=True)
def no_stale_views(spark):  # noqa: ANN001, ANN201
    """Temp views live in the shared SparkSession: drop those an earlier test's lake left, so
    a view named like this test's table can never be read in its place."""
    for table in spark.catalog.listTables():
        if table.isTemporary:
            spark.catalog.dropTempView(table.name)
