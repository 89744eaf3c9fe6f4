"""dbt-tests-adapter's `python_model` group: Python models and PySpark models.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonEmptyTests,
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
    BasePythonSampleTests,
)
from dbt.tests.adapter.python_model.test_spark import BasePySparkTests
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark]


class TestPythonModel(BasePythonModelTests):
    pass


class TestPythonIncremental(BasePythonIncrementalTests):
    pass


class TestPythonMetaGet(BasePythonMetaGetTests):
    pass


class TestPythonEmpty(BasePythonEmptyTests):
    pass


class TestPythonSample(BasePythonSampleTests):
    pass


def _pandas_on_spark_unavailable() -> str | None:
    try:
        import pyspark.pandas  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f"pyspark.pandas cannot be imported in this environment: {exc}"
    return None


class TestPySpark(BasePySparkTests):
    def test_different_dataframes(self, project):  # noqa: ANN001, ANN201
        # databricks.koalas was merged into PySpark as pyspark.pandas and is not installable
        # for Spark 4; dbt-spark excludes that model the same way.
        results = run_dbt(["run", "--exclude", "koalas_df", "pandas_on_spark_df"])
        assert len(results) == 2

    def test_pandas_on_spark_dataframe(self, project):  # noqa: ANN001, ANN201
        reason = _pandas_on_spark_unavailable()
        if reason:
            pytest.skip(reason)
        results = run_dbt(["run", "--select", "pandas_on_spark_df"])
        assert len(results) == 1
