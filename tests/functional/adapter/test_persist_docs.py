"""dbt-tests-adapter's `persist_docs` group: descriptions stored as DuckLake comment tags.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.persist_docs.test_persist_docs import (
    BasePersistDocs,
    BasePersistDocsAllColumnsMissing,
    BasePersistDocsColumnMissing,
    BasePersistDocsCommentOnQuotedColumn,
    BasePersistDocsQuotedColumnCaseSensitive,
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch,
)
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark, pytest.mark.dbt_artifacts]


class TestPersistDocs(BasePersistDocs):
    def test_has_comments_pglike(self, project):  # noqa: ANN001, ANN201
        # DuckLake keeps column tags for tables only: a view has no column ids to tag (DuckDB
        # refuses COMMENT ON COLUMN for a DuckLake view too), so view column comments stay empty.
        import json

        run_dbt(["docs", "generate"])
        with open("target/catalog.json") as fp:
            catalog_data = json.load(fp)
        assert len(catalog_data["nodes"]) == 4
        self._assert_has_table_comments(catalog_data["nodes"]["model.test.table_model"])
        self._assert_has_view_comments(catalog_data["nodes"]["model.test.view_model"],
                                       has_node_comments=True, has_column_comments=False)
        self._assert_has_view_comments(catalog_data["nodes"]["model.test.no_docs_model"],
                                       False, False)


class TestPersistDocsColumnMissing(BasePersistDocsColumnMissing):
    pass


class TestPersistDocsAllColumnsMissing(BasePersistDocsAllColumnsMissing):
    pass


class TestPersistDocsQuotedColumnCaseSensitive(BasePersistDocsQuotedColumnCaseSensitive):
    pass


class TestPersistDocsQuotedDescriptionNotAppliedOnMismatch(
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch
):
    pass


class TestPersistDocsCommentOnQuotedColumn(BasePersistDocsCommentOnQuotedColumn):
    pass
