"""Maintenance from dbt: run-operation macros and the post_commit_maintenance model config."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.lake import Catalog
from dbt.adapters.ducklake.lake.inlining.rows import read_rows

pytestmark = [pytest.mark.spark]

# An incremental model whose every run appends a few rows: inlined, until flushed.
EVENTS = """{{ config(materialized='incremental', post_commit_maintenance=var('maint', [])) }}
select cast({{ var('run', 0) }} * 10 + id as bigint) as id, {{ var('run', 0) }} as run
from range(3)"""
BIG = """{{ config(materialized='incremental') }}
select cast({{ var('run', 0) }} * 1000 + id as bigint) as id from range(50)"""


def catalog(project) -> Catalog:  # noqa: ANN001
    return Catalog.open(project.adapter.config.credentials.catalog)


def inlined(project, name: str) -> int:  # noqa: ANN001
    lake = catalog(project)
    with lake.read() as conn:
        table = lake.table(project.test_schema, name, conn=conn)
        blocks = read_rows(lake, conn, table.table_id, "end_snapshot IS NULL", {})
        return sum(len(block.row_ids) for block in blocks)


def live_files(project, name: str) -> int:  # noqa: ANN001
    lake = catalog(project)
    with lake.read() as conn:
        table = lake.table(project.test_schema, name, conn=conn)
        return len(lake.data_files(table.table_id, lake.latest_snapshot(conn).snapshot_id,
                                   conn))


class TestMaintenanceOperations:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"events.sql": EVENTS, "big.sql": BIG}

    def test_run_operations(self, project):  # noqa: ANN001
        for run in range(3):
            run_dbt(["run", "--vars", f"{{run: {run}}}"])
        schema = project.test_schema
        assert inlined(project, "events") == 9 and live_files(project, "big") >= 3
        _, out = run_dbt_and_capture(["run-operation", "ducklake_flush_inlined_data",
                                      "--args", f"{{schema: {schema}, table: events}}"])
        assert "flushed 9 row(s) of 1 table(s)" in out
        assert inlined(project, "events") == 0 and live_files(project, "events") == 1
        _, out = run_dbt_and_capture(["run-operation", "ducklake_merge_adjacent_files",
                                      "--args", f"{{schema: {schema}, table: big}}"])
        assert "merge_adjacent_files: replaced" in out and live_files(project, "big") == 1
        run_dbt(["run-operation", "ducklake_set_option",
                 "--args", "{option: delete_older_than, value: '1 hour'}"])
        _, out = run_dbt_and_capture(["run-operation", "ducklake_checkpoint"])
        assert "checkpoint:" in out
        _, out = run_dbt_and_capture(["run-operation", "ducklake_cleanup_old_files",
                                      "--args", "{cleanup_all: true, dry_run: true}"])
        assert "cleanup_old_files: would delete" in out
        assert project.run_sql(f"select count(*) from `{schema}.events`",
                               fetch="one")[0] == 9
        assert project.run_sql(f"select count(*) from `{schema}.big`", fetch="one")[0] == 150
        # a wrong option names the accepted ones
        _, out = run_dbt_and_capture(["run-operation", "ducklake_set_option", "--args",
                                      "{option: no_such, value: 1}"], expect_pass=False)
        assert "supported options" in out


class TestPostCommitMaintenance:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"events.sql": EVENTS}

    def test_model_config(self, project):  # noqa: ANN001
        run_dbt(["run", "--vars", "{run: 0}"])
        run_dbt(["run", "--vars", "{run: 1}"])
        assert inlined(project, "events") == 6
        _, out = run_dbt_and_capture(["run", "--vars", "{run: 2, maint: [flush_inlined_data]}"])
        assert "flush_inlined_data: flushed 9 row(s)" in out
        assert inlined(project, "events") == 0
        assert project.run_sql(f"select count(*) from `{project.test_schema}.events`",
                               fetch="one")[0] == 9
        _, out = run_dbt_and_capture(["run", "--vars", "{run: 3, maint: [expire_snapshots]}"],
                                     expect_pass=False)
        assert "post_commit_maintenance" in out and "flush_inlined_data" in out
