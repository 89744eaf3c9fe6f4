"""dbt-tests-adapter's `relations` group: changing a relation's type, dropping schemas.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.relations.test_changing_relation_type import (
    BaseChangeRelationTypeValidator,
)
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed

pytestmark = [pytest.mark.spark]


class TestChangeRelationTypes(BaseChangeRelationTypeValidator):
    def test_changing_materialization_changes_relation_type(self, project):  # noqa: ANN001, ANN201
        # The base test also switches to `incremental`; incremental models are a separate
        # feature, so only the view <-> table switches are exercised here.
        self._run_and_check_materialization("view")
        self._run_and_check_materialization("table")
        self._run_and_check_materialization("view")
        self._run_and_check_materialization("table", extra_args=["--full-refresh"])


class TestDropSchemaNamed(BaseDropSchemaNamed):
    pass
