"""Engine fixtures (the lake itself, ``lake``, is in the root conftest)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_stale_views(spark):  # noqa: ANN001, ANN201
    """Temp views live in the shared SparkSession: drop those an earlier test's lake left, so
    a view named like this test's table can never be read in its place."""
    # SHOW TABLES, not spark.catalog.listTables(): that API decodes rows into objects, which
    # needs code generation, and the tests run without it (SPARK_TEST_CONF)
    for row in spark.sql("SHOW TABLES").collect():
        if row.isTemporary:
            spark.catalog.dropTempView(row.tableName)
