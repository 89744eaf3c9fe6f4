"""dbt's own adapter test suite, basic group, unskipped."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_get_catalog_for_single_relation import (
    BaseGetCatalogForSingleRelation,
)
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection

pytestmark = [pytest.mark.spark]


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


@pytest.mark.dbt_artifacts
class TestEmpty(BaseEmpty):
    pass


@pytest.mark.dbt_artifacts
class TestEphemeral(BaseEphemeral):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestTableMaterialization(BaseTableMaterialization):
    pass


class TestAdapterMethods(BaseAdapterMethod):
    pass


class TestValidateConnection(BaseValidateConnection):
    pass


class TestGetCatalogForSingleRelation(BaseGetCatalogForSingleRelation):
    @staticmethod
    def _expected(project, name, kind, stats):  # noqa: ANN001, ANN205
        from dbt_common.contracts.metadata import (
            CatalogTable,
            ColumnMetadata,
            StatsItem,
            TableMetadata,
        )

        types = [("id", "bigint"), ("first_name", "string"), ("email", "string"),
                 ("ip_address", "string"), ("updated_at", "timestamp")]
        return CatalogTable(
            metadata=TableMetadata(type=kind, schema=project.test_schema, name=name),
            columns={n: ColumnMetadata(type=t, index=i + 1, name=n)
                     for i, (n, t) in enumerate(types)},
            stats={**{k: StatsItem(id=k, label=label, value=value, include=True, description=d)
                      for k, label, value, d in stats},
                   # as `dbt docs generate` has it (dbt-core's format_stats)
                   "has_stats": StatsItem(
                       id="has_stats", label="Has Stats?", value=bool(stats), include=False,
                       description="Indicates whether there are statistics for this table")},
        )

    @pytest.fixture(scope="class")
    def expected_catalog_my_seed(self, project):  # noqa: ANN001, ANN201
        return self._expected(project, "my_seed", "table", [
            ("row_count", "Row count", 1, "Live rows at the latest snapshot (DuckLake metadata)"),
            ("bytes", "Size", 0, "Bytes of live Parquet data files"),
        ])

    @pytest.fixture(scope="class")
    def expected_catalog_my_view_model(self, project):  # noqa: ANN001, ANN201
        return self._expected(project, "my_view_model", "view", [])


def lake_stats():  # noqa: ANN201
    """Tables report live rows and bytes from DuckLake metadata."""
    from dbt.tests.util import AnyInteger

    return {
        "row_count": {"id": "row_count", "label": "Row count", "value": AnyInteger(),
                      "include": True,
                      "description": "Live rows at the latest snapshot (DuckLake metadata)"},
        "bytes": {"id": "bytes", "label": "Size", "value": AnyInteger(), "include": True,
                  "description": "Bytes of live Parquet data files"},
        "has_stats": {"id": "has_stats", "label": "Has Stats?", "value": True,
                      "description": "Indicates whether there are statistics for this table",
                      "include": False},
    }


@pytest.mark.dbt_artifacts
class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):  # noqa: ANN001, ANN201
        from dbt.tests.adapter.basic import expected_catalog

        return expected_catalog.base_expected_catalog(
            project, role=None, id_type="bigint", text_type="string", time_type="timestamp",
            view_type="view", table_type="table", model_stats=expected_catalog.no_stats(),
            seed_stats=lake_stats(),
        )


@pytest.mark.dbt_artifacts
class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):  # noqa: ANN001, ANN201
        from dbt.tests.adapter.basic import expected_catalog

        return expected_catalog.expected_references_catalog(
            project, role=None, id_type="bigint", text_type="string", time_type="timestamp",
            bigint_type="bigint", view_type="view", table_type="table",
            model_stats=lake_stats(), seed_stats=lake_stats(),
            view_summary_stats=expected_catalog.no_stats(),
        )
