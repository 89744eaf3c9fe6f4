"""dbt-tests-adapter's `dbt_show` group: dbt show.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark]


class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    DATABASE_ERROR_MESSAGE = "Syntax error at or near 'limit'"

    def test_double_limit_throws_syntax_error(self, project):  # noqa: ANN001, ANN201
        # The base asserts on str(ExceptionInfo), whose repr is cut to 240 characters and
        # loses Spark's message; check the exception's own text instead.
        from dbt_common.exceptions import DbtRuntimeError

        with pytest.raises(DbtRuntimeError) as e:
            run_dbt(["show", "--limit", "1", "--inline", "select 1 limit 1"])
        assert "PARSE_SYNTAX_ERROR" in str(e.value)
        assert self.DATABASE_ERROR_MESSAGE in str(e.value)
