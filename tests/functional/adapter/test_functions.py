"""dbt-tests-adapter's `functions` group (dbt 1.11's UDFs), for the SQL functions the lake stores.

A dbt SQL function becomes a Spark SQL function stored in the lake as a DuckLake macro: found
by every later dbt invocation (``dbt show`` below runs after ``dbt build``) and by DuckDB where
its body translates. Spark's syntax has DETERMINISTIC / NOT DETERMINISTIC where PostgreSQL has
IMMUTABLE / VOLATILE, and parameter defaults, so the volatility checks and the default-argument
class are adjusted accordingly. Python, JavaScript, aggregate and table functions fail with the
adapter's own error, which names what is accepted.
"""

from __future__ import annotations

import pytest
from conftest import duckdb_connect, postgres_profile_target
from dbt.artifacts.schemas.results import RunStatus
from dbt.events.types import RunResultError
from dbt.tests.adapter.functions import files
from dbt.tests.adapter.functions.test_udafs import BasicSQLUDAF
from dbt.tests.adapter.functions.test_udfs import (
    CanFindScalarFunctionRelation,
    DeterministicUDF,
    ErrorForUnsupportedType,
    NonDeterministicUDF,
    PythonUDFNotSupported,
    SqlUDFDefaultArgSupport,
    StableUDF,
    UDFsBasic,
)
from dbt.tests.util import run_dbt
from dbt_common.events.event_catcher import EventCatcher

pytestmark = [pytest.mark.spark]

_USES_FUNCTION = """
{{ config(materialized='view') }}
select {{ function('price_for_xlarge') }}(price) as xlarge
from (select 21.0 as price)
"""


class TestUDFsBasic(UDFsBasic):
    """dbt's own check, then a model and a view calling the function in a later invocation,
    and DuckDB running the macro the lake stores."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"uses_function.sql": _USES_FUNCTION}

    def test_udfs(self, project, sql_event_catcher):  # noqa: ANN001
        result = run_dbt(["build", "--debug", "--select", "resource_type:function"],
                         callbacks=[sql_event_catcher.catch])
        assert [r.status for r in result.results] == [RunStatus.Success]
        assert len(sql_event_catcher.caught_events) == 1
        self.check_function_volatility(sql_event_catcher.caught_events[0].data.sql)
        show = run_dbt(["show", "--inline", "SELECT {{ function('price_for_xlarge') }}(100)"])
        assert int(show.results[0].agate_table.rows[0].values()[0]) == 200
        run_dbt(["run", "--select", "uses_function"])
        rows = project.run_sql(f"select xlarge from {project.test_schema}.uses_function",
                               fetch="all")
        assert [float(r[0]) for r in rows] == [42.0]
        target = project.adapter.config.credentials
        duck = duckdb_connect()
        try:
            duck.execute(_duckdb_attach(target))
            assert duck.execute(f"SELECT lake.{project.test_schema}.price_for_xlarge(100)"
                                ).fetchone()[0] == 200.0
        finally:
            duck.close()


def _duckdb_attach(credentials) -> str:  # noqa: ANN001
    """DuckDB's ATTACH of the profile's lake (a SQLite or PostgreSQL catalog)."""
    catalog = credentials.catalog
    if catalog.startswith("sqlite:///"):
        source = "sqlite:" + catalog[len("sqlite:///"):]
        options = f"DATA_PATH '{credentials.data_path}'"
    else:
        source = catalog
        options = f"DATA_PATH '{credentials.data_path}', METADATA_SCHEMA " \
                  f"'{credentials.metadata_schema}'"
    return f"ATTACH 'ducklake:{source}' AS lake ({options})"


@pytest.mark.postgres
class TestUDFsBasicPostgres(TestUDFsBasic):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory):  # noqa: ANN001, ANN201
        yield from postgres_profile_target(tmp_path_factory, threads=1)


class TestDeterministicUDF(DeterministicUDF):
    def check_function_volatility(self, sql: str) -> None:
        assert "DETERMINISTIC" in sql and "NOT DETERMINISTIC" not in sql


class TestNonDeterministicUDF(NonDeterministicUDF):
    def check_function_volatility(self, sql: str) -> None:
        assert "NOT DETERMINISTIC" in sql


@pytest.mark.skip(reason="Spark SQL functions have no `stable` volatility: the adapter warns "
                         "and leaves it out, so dbt's check for STABLE cannot pass")
class TestStableUDF(StableUDF):
    pass


class TestSqlUDFDefaultArgSupport(SqlUDFDefaultArgSupport):
    expect_default_arg_support = True


class TestCanFindScalarFunctionRelation(CanFindScalarFunctionRelation):
    pass


def _fails_with_our_error(kind: str) -> None:
    catcher = EventCatcher(RunResultError)
    result = run_dbt(["build"], expect_pass=False, callbacks=[catcher.catch])
    assert [r.status for r in result.results if r.node.resource_type == "function"] == [
        RunStatus.Error]
    message = catcher.caught_events[0].data.msg
    assert f"is {kind}" in message and "scalar SQL functions" in message, message


class TestErrorForUnsupportedType(ErrorForUnsupportedType):
    def test_udfs(self, project, sql_event_catcher):  # noqa: ANN001
        _fails_with_our_error("a table function")


class TestPythonUDFNotSupported(PythonUDFNotSupported):
    def test_udfs(self, project, sql_event_catcher):  # noqa: ANN001
        _fails_with_our_error("a Python function")


class TestSQLUDAFNotSupported(BasicSQLUDAF):
    """Aggregate functions: refused with the adapter's error (dbt's class, which expects the
    aggregate to run, cannot pass on a lake that stores no aggregates)."""

    @pytest.fixture(scope="class")
    def functions(self):  # noqa: ANN201
        return {"sum_squared.sql": files.SUM_SQUARED_UDAF_SQL,
                "sum_squared.yml": files.SUM_SQUARED_UDAF_SQL_YML}

    def test_udaf(self, project, sql_event_catcher):  # noqa: ANN001
        _fails_with_our_error("an aggregate function")
