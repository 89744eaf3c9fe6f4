"""dbt-tests-adapter's `caching` group: the relation cache.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark]


class _NoDatabaseCaching:
    """The base check lower()s relation.database; a lake is one database and relations carry
    none (None), so compare the parts as strings, otherwise unchanged."""

    def run_and_inspect_cache(self, project, run_args=None):  # noqa: ANN001, ANN201
        run_dbt(run_args)
        adapter = project.adapter
        assert len(adapter.cache.relations) == 1
        relation = list(adapter.cache.relations).pop()
        assert relation.schema == project.test_schema
        assert relation.schema == project.test_schema.lower()

        run_dbt(run_args)
        adapter = project.adapter
        assert len(adapter.cache.relations) == 1
        second_relation = list(adapter.cache.relations).pop()
        for key in ["database", "schema", "identifier"]:
            assert str(getattr(relation, key) or "").lower() == \
                str(getattr(second_relation, key) or "").lower()


class TestCachingLowercaseModel(_NoDatabaseCaching, BaseCachingLowercaseModel):
    pass


class TestCachingUppercaseModel(_NoDatabaseCaching, BaseCachingUppercaseModel):
    pass


class TestCachingSelectedSchemaOnly(_NoDatabaseCaching, BaseCachingSelectedSchemaOnly):
    pass


class TestNoPopulateCache(_NoDatabaseCaching, BaseNoPopulateCache):
    pass
