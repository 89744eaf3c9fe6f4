"""Reliability fixtures: a SparkLake over the test's lake, as in the engine tests."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark import SparkLake


@pytest.fixture
def lake(spark, lake_target):  # noqa: ANN001, ANN201
    lk = SparkLake.open(spark, lake_target.catalog, lake_target.data_path,
                        **lake_target.open_kwargs())
    yield lk
    lk.close()
