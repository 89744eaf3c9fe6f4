"""dbt-tests-adapter's `aliases` group: model aliases.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.aliases import fixtures as alias_fixtures
from dbt.tests.adapter.aliases.test_aliases import (
    BaseAliasErrors,
    BaseAliases,
    BaseSameAliasDifferentDatabases,
    BaseSameAliasDifferentSchemas,
)

pytestmark = [pytest.mark.spark]


_CAST_SQL = alias_fixtures.MACROS__CAST_SQL + """
{% macro ducklake__string_literal(s) %}
    cast('{{ s }}' as string)
{% endmacro %}
"""


class _SparkAliasMacros:
    @pytest.fixture(scope="class")
    def macros(self):  # noqa: ANN201
        return {"cast.sql": _CAST_SQL, "expect_value.sql": alias_fixtures.MACROS__EXPECT_VALUE_SQL}


class TestAliases(_SparkAliasMacros, BaseAliases):
    pass


class TestAliasErrors(_SparkAliasMacros, BaseAliasErrors):
    pass


class TestSameAliasDifferentSchemas(_SparkAliasMacros, BaseSameAliasDifferentSchemas):
    pass


@pytest.mark.skip(reason="a DuckLake lake is a single database: relations carry no database "
                         "part, so two databases cannot be targeted")
class TestSameAliasDifferentDatabases(_SparkAliasMacros, BaseSameAliasDifferentDatabases):
    pass
