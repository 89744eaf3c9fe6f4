"""dbt's view materialization refuses a model whose query is more than a query over the lake
(tests/engine/test_view_safety.py has the whole list): nothing runs and nothing is stored."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="class")
def marker(tmp_path_factory):  # noqa: ANN001, ANN201
    return tmp_path_factory.mktemp("marker") / "ran"


class TestViewModelsAreChecked:
    @pytest.fixture(scope="class")
    def models(self, marker):  # noqa: ANN001, ANN201
        secret = marker.parent / "secret.txt"
        secret.write_text("do not read me\n")
        return {
            "base.sql": "{{ config(materialized='table') }} select 1 as id",
            "runs.sql": "{{ config(materialized='view') }}\n"
                        f"select transform(id) using 'touch {marker}' as (x) "
                        "from {{ ref('base') }}",
            "reads.sql": "{{ config(materialized='view') }}\n"
                         f"select * from text.`{secret}`",
            "fine.sql": "{{ config(materialized='view') }} select id from {{ ref('base') }}",
        }

    def test_refused_with_the_view_and_the_construct(self, project, marker):  # noqa: ANN001
        results = run_dbt(["run"], expect_pass=False)
        outcome = {r.node.name: (r.status, r.message or "") for r in results.results}
        schema = project.test_schema
        assert outcome["base"][0] == "success" and outcome["fine"][0] == "success"
        status, message = outcome["runs"]
        assert status == "error" and f"view {schema}.runs" in message and \
            "TRANSFORM" in message, message
        status, message = outcome["reads"]
        assert status == "error" and f"view {schema}.reads" in message and \
            "files by path" in message, message
        assert not marker.exists(), "the view's command ran"
        lake = Catalog.open(project.adapter.config.credentials.catalog)
        assert sorted(lake.relations(schema)) == [("table", "base"), ("view", "fine")]
