"""Time travel and the change feed from dbt: the macros in models, `dbt show` and
run_query, and a profile pinned to a snapshot."""

from __future__ import annotations

import os

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark]

ORDERS = ("{{ config(materialized='table') }}\n"
          "select id, cast(id * 10 as bigint) as amount from range({{ var('n', 5) }})")


def shown(output: str) -> list[str]:
    """The cells of the last row `dbt show` printed."""
    rows = [line for line in output.splitlines() if line.startswith("|")]
    return [cell.strip() for cell in rows[-1].strip("|").split("|")]


def latest(project) -> int:  # noqa: ANN001
    return Catalog.open(project.adapter.config.credentials.catalog).latest_snapshot().snapshot_id


class TestTimeTravelMacros:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"orders.sql": ORDERS}

    def test_macros_in_models_and_show(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "orders"])
        v1 = latest(project)
        run_dbt(["run", "-s", "orders", "--vars", "{n: 8}"])
        schema = project.test_schema
        write_file("select * from {{ ducklake_ref_at('orders', version=var('v', 0)) }}",
                   project.project_root, "models", "orders_then.sql")
        write_file("select * from {{ ducklake_at(ref('orders'), timestamp=var('ts')) }}",
                   project.project_root, "models", "orders_at_time.sql")
        write_file("select change_type, count(*) as n, sum(amount) as amount\n"
                   "from {{ ducklake_table_changes(ref('orders'), var('v', 0) + 1) }}\n"
                   "group by change_type",
                   project.project_root, "models", "orders_changes.sql")
        when = Catalog.open(project.adapter.config.credentials.catalog).snapshot(version=v1)
        ts = when.snapshot_time.isoformat()
        run_dbt(["run", "-s", "orders_then", "orders_at_time", "orders_changes",
                 "--vars", f"{{v: {v1}, ts: '{ts}'}}"])
        assert project.run_sql(f"select count(*) from `{schema}.orders_then`",
                               fetch="one")[0] == 5
        assert project.run_sql(f"select count(*) from `{schema}.orders_at_time`",
                               fetch="one")[0] == 5
        changes = {r[0]: (r[1], r[2]) for r in project.run_sql(
            f"select * from `{schema}.orders_changes`", fetch="all")}
        # the rebuild replaced 5 rows with 8 in one snapshot
        assert changes == {"delete": (5, 100), "insert": (8, 280)}
        # run_query / dbt show over the snapshot views and the insertions feed
        _, out = run_dbt_and_capture(
            ["show", "--inline", "select max(snapshot_id) as v from {{ ducklake_snapshots() }}"])
        assert shown(out) == [str(latest(project))]
        _, out = run_dbt_and_capture(
            ["show", "--inline", "select {{ ducklake_current_snapshot() }} as current_v"])
        assert "current_v" in out and shown(out) == [str(latest(project))]
        _, out = run_dbt_and_capture([
            "show", "--inline", "select count(*) as inserted from "
            f"{{{{ ducklake_table_insertions('{schema}.orders', {v1 + 1}) }}}}"])
        assert shown(out) == ["8"]

    def test_unknown_version_fails_with_the_range(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "orders"])
        with pytest.raises(DbtRuntimeError, match="no snapshot with version 999") as failure:
            run_dbt(["show", "--inline",
                     "select * from {{ ducklake_ref_at('orders', version=999) }}"])
        assert "available snapshots are 0 " in str(failure.value)


class TestPinnedProfile:
    @pytest.fixture(scope="class")
    def dbt_profile_data(self, unique_schema, dbt_profile_target):  # noqa: ANN001, ANN201
        target = dict(dbt_profile_target, schema=unique_schema)
        pin = "{{ env_var('DUCKLAKE_TEST_PIN', '0') | as_number }}"
        pinned = dict(target, snapshot_version=pin)
        return {"test": {"outputs": {"default": target, "pinned": pinned},
                         "target": "default"}}

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"orders.sql": ORDERS}

    def test_pinned_reads_and_refused_writes(self, project):  # noqa: ANN001
        run_dbt(["run"])
        pin = latest(project)
        run_dbt(["run", "--vars", "{n: 8}"])
        os.environ["DUCKLAKE_TEST_PIN"] = str(pin)
        try:
            _, out = run_dbt_and_capture([
                "show", "--target", "pinned", "--inline",
                f"select count(*) as pinned_rows from {project.test_schema}.orders"])
            assert "pinned_rows" in out and shown(out) == ["5"]
            _, out = run_dbt_and_capture([
                "show", "--target", "pinned", "--inline",
                "select {{ ducklake_current_snapshot() }} as current_v"])
            assert shown(out) == [str(pin)]
            _, out = run_dbt_and_capture(["run", "--target", "pinned"], expect_pass=False)
            assert f"pinned to snapshot {pin}" in out
        finally:
            del os.environ["DUCKLAKE_TEST_PIN"]
        # the unpinned target, in the same process, still sees the latest snapshot
        _, out = run_dbt_and_capture([
            "show", "--inline", f"select count(*) as n from {project.test_schema}.orders"])
        assert shown(out) == ["8"]
