"""dbt-tests-adapter's `column_types` group: column types.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.column_types.test_column_types import BaseColumnTypes

pytestmark = [pytest.mark.spark]


class TestColumnTypes(BaseColumnTypes):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        from dbt.tests.adapter.column_types import fixtures

        return {
            "model.sql": """
select
    cast(1 as smallint) as smallint_col,
    cast(2 as int) as int_col,
    cast(3 as bigint) as bigint_col,
    cast(4.0 as float) as real_col,
    cast(5.0 as double) as double_col,
    cast(6.0 as decimal(10, 2)) as numeric_col,
    cast('7' as string) as text_col,
    cast('8' as varchar(20)) as varchar_col
""",
            "schema.yml": fixtures.schema_yml,
        }

    def test_run_and_test(self, project):  # noqa: ANN001, ANN201
        self.run_and_test()
