"""dbt-tests-adapter's clone and simple-copy groups, on a SQLite and a PostgreSQL catalog.

`dbt clone` makes views (DuckLake has no zero-copy table clone): the NotPossible class
applies. The simple-copy models call ``adapter.get_relation(database=target.database, ...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import (
    postgres_profile_target,
)
from dbt.tests.adapter.dbt_clone.test_dbt_clone import (
    BaseCloneNotPossible,
    BaseCloneSameTargetAndState,
)
from dbt.tests.adapter.simple_copy.test_simple_copy import (
    EmptyModelsArentRunBase,
    SimpleCopyBase,
)
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark, pytest.mark.dbt_artifacts]  # `dbt clone` reads a state manifest


class _PostgresCatalog:
    """The class's lake on the local PostgreSQL server, in a metadata schema of its own."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory) -> Iterator[dict[str, Any]]:  # noqa: ANN001
        yield from postgres_profile_target(tmp_path_factory, threads=4)


class TestCloneNotPossible(BaseCloneNotPossible):
    pass


@pytest.mark.postgres
class TestCloneNotPossiblePostgres(_PostgresCatalog, BaseCloneNotPossible):
    pass


class TestCloneSameTargetAndState(BaseCloneSameTargetAndState):
    pass


class _SimpleCopy(SimpleCopyBase):
    @pytest.mark.skip(reason="DuckLake has no materialized views (Spark has no such statement)")
    def test_simple_copy_with_materialized_views(self, project):  # noqa: ANN001
        pass


class TestSimpleCopy(_SimpleCopy):
    pass


@pytest.mark.postgres
class TestSimpleCopyPostgres(_PostgresCatalog, _SimpleCopy):
    pass


class _EmptyModelsArentRun(EmptyModelsArentRunBase):
    def test_dbt_doesnt_run_empty_models(self, project):  # noqa: ANN001
        """The base test's checks; it lists the schema's tables from information_schema.tables,
        which a lake does not have, so they are listed with the adapter."""
        results = run_dbt(["seed"])
        assert len(results) == 1
        results = run_dbt()
        assert len(results) == 7
        with project.adapter.connection_named("__test"):
            tables = {r.identifier for r in project.adapter.list_relations(
                database=project.database, schema=project.test_schema)}
        assert "materialized" in tables and "get_and_ref" in tables
        assert "empty" not in tables
        assert "disabled" not in tables


class TestEmptyModelsArentRun(_EmptyModelsArentRun):
    pass


@pytest.mark.postgres
class TestEmptyModelsArentRunPostgres(_PostgresCatalog, _EmptyModelsArentRun):
    pass
