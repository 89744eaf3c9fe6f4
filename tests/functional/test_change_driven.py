"""Change-driven incremental models: ducklake_changes_since_last_run hands a model the changes
committed since it last consumed them; the watermark lives in the model's own commit, so every
change is processed exactly once across runs and failures."""

from __future__ import annotations

import json

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark]

ORDERS = """
{{ config(materialized='incremental', unique_key='id',
          matched_condition='DBT_INTERNAL_SOURCE.status <> DBT_INTERNAL_DEST.status') }}
select id, case when id = {{ var('changed', -1) }} then 'shipped' else 'placed' end as status
from range({{ var('n', 5) }})
"""

LOG = """
{{ config(materialized='incremental', incremental_strategy='append') }}
select c.snapshot_id, c.rowid, c.change_type, c.id, c.status,
       assert_true({{ var('fail', 'false') }} = false) is null as ok
from {{ ducklake_changes_since_last_run(ref('orders')) }} as c
"""


class TestChangeDrivenModel:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"orders.sql": ORDERS, "order_log.sql": LOG}

    def _log(self, project) -> list[tuple]:  # noqa: ANN001
        return [tuple(r) for r in project.run_sql(
            f"select change_type, id, status from `{project.test_schema}.order_log` "
            "order by snapshot_id, id, change_type", fetch="all")]

    def test_each_change_once(self, project):  # noqa: ANN001
        run_dbt(["run"])
        assert self._log(project) == [("insert", i, "placed") for i in range(5)]

        run_dbt(["run", "--vars", "{changed: 2}"])  # orders rebuilt: one row changed
        assert self._log(project)[5:] == [("update_postimage", 2, "shipped"),
                                           ("update_preimage", 2, "placed")]

        run_dbt(["run", "-s", "order_log", "--vars", "{changed: 2}"])  # nothing new
        assert len(self._log(project)) == 7

        # New changes, then a failing run: nothing lands and the watermark does not move ...
        run_dbt(["run", "-s", "orders", "--vars", "{changed: 2, n: 6}"])
        run_dbt(["run", "-s", "order_log", "--vars", "{fail: 'true'}"], expect_pass=False)
        assert len(self._log(project)) == 7
        # ... so the next run processes those changes, once.
        run_dbt(["run", "-s", "order_log"])
        assert self._log(project)[7:] == [("insert", 5, "placed")]

        lake = Catalog.open(project.adapter.config.credentials.catalog)
        last = json.loads(lake.snapshots()[-1].commit_extra_info)
        key = f"{project.test_schema}.orders"
        assert last["ducklake_watermarks"] == {key: lake.snapshots()[-2].snapshot_id}

    def test_full_refresh_reads_everything(self, project):  # noqa: ANN001
        # orders with an update in its history, whether or not the test above ran first
        run_dbt(["run", "-s", "orders"])
        run_dbt(["run", "-s", "orders", "--vars", "{changed: 3}"])
        run_dbt(["run", "-s", "order_log", "--full-refresh"])
        kinds = {r[0] for r in self._log(project)}
        assert kinds == {"insert", "update_preimage", "update_postimage"}
