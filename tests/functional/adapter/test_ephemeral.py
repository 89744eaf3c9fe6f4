"""dbt-tests-adapter's `ephemeral` group: ephemeral models.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.ephemeral.test_ephemeral import (
    BaseEphemeralErrorHandling,
    BaseEphemeralMulti,
    BaseEphemeralNested,
)
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark]


def _run_sql_text(path):  # noqa: ANN001, ANN202
    import re

    with open(path) as fp:
        text = re.sub(r"\d+", "", fp.read())
    return "".join(text.split())


class TestEphemeralMulti(BaseEphemeralMulti):
    def test_ephemeral_multi(self, project):  # noqa: ANN001, ANN201
        # Same checks; the expected DDL is ours (a DuckLake view replaced in place, relations
        # rendered as one `schema.name` identifier) instead of PostgreSQL's.
        from dbt.tests.util import check_relations_equal

        run_dbt(["seed"])
        results = run_dbt(["run"])
        assert len(results) == 3
        check_relations_equal(project.adapter, ["seed", "dependent"])
        check_relations_equal(project.adapter, ["seed", "double_dependent"])
        check_relations_equal(project.adapter, ["seed", "super_dependent"])
        expected_sql = (
            "create or replace view `test_test_ephemeral.double_dependent` as "
            "with __dbt__cte__base as ("
            "select * from test_test_ephemeral.seed"
            "),  __dbt__cte__base_copy as ("
            "select * from `__dbt__cte__base`"
            ")-- base_copy just pulls from base. Make sure the listed"
            "-- graph of CTEs all share the same dbt_cte__base cte"
            "select * from `__dbt__cte__base` where gender = 'Male'"
            "union all"
            "select * from `__dbt__cte__base_copy` where gender = 'Female'"
        )
        assert _run_sql_text("./target/run/test/models/double_dependent.sql") == \
            "".join(expected_sql.split())


class TestEphemeralNested(BaseEphemeralNested):
    def test_ephemeral_nested(self, project):  # noqa: ANN001, ANN201
        results = run_dbt(["run"])
        assert len(results) == 2
        expected_sql = (
            "create or replace view `test_test_ephemeral.root_view` as "
            "with __dbt__cte__ephemeral_level_two as ("
            "select * from `test_test_ephemeral.source_table`"
            "),  __dbt__cte__ephemeral as ("
            "select * from `__dbt__cte__ephemeral_level_two`"
            ")select * from `__dbt__cte__ephemeral`"
        )
        assert _run_sql_text("./target/run/test/models/root_view.sql") == \
            "".join(expected_sql.split())


class TestEphemeralErrorHandling(BaseEphemeralErrorHandling):
    pass
