"""dbt-tests-adapter's `dbt_debug` group: dbt debug.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.dbt_debug.test_dbt_debug import (
    BaseDebugInvalidProjectPostgres,
    BaseDebugPostgres,
    BaseDebugProfileVariable,
)

pytestmark = [pytest.mark.spark]


class _DebugTargets:
    @pytest.fixture(scope="class")
    def profiles_config_update(self, dbt_profile_target, unique_schema):  # noqa: ANN001, ANN201
        # Alternative targets the PostgreSQL suite defines, in ducklake terms: an invalid
        # profile, a lake that cannot be opened, and an empty output.
        bad = dict(dbt_profile_target, schema=unique_schema)
        return {"test": {"outputs": {
            "default": dict(dbt_profile_target, schema=unique_schema),
            "nopass": dict(bad, unknown_key="x"),
            "wronguser": dict(bad, catalog="postgres:host=127.0.0.1 port=1 dbname=nowhere"),
            "none_target": None,
        }, "target": "default"}}


class TestDebug(_DebugTargets, BaseDebugPostgres):
    pass


class TestDebugProfileVariable(_DebugTargets, BaseDebugProfileVariable, BaseDebugPostgres):
    pass


class TestDebugInvalidProject(BaseDebugInvalidProjectPostgres):
    pass
