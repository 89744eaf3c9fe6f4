"""Engine fixtures (the lake itself, ``lake``, is in the root conftest)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_stale_views(spark):  # noqa: ANN001, ANN201
    """Temp views live in the shared SparkSession: drop those an earlier test's lake left, so
    a view named like this test's table can never be read in its place."""
    for table in spark.catalog.listTables():
        if table.isTemporary:
            spark.catalog.dropTempView(table.name)
