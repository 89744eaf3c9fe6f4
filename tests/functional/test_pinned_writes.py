"""A profile pinned to a snapshot writes nothing from dbt: every maintenance run-operation,
ducklake_set_option, statements Spark would run itself (through run_query) and a Python
model fail with the pin named, committing no snapshot and touching no file; on SQLite and
PostgreSQL catalogs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import (
    postgres_profile_target,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture
from sqlalchemy import text

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark]

# Inlined rows (3 a run), and Parquet files (50 rows a run) with a delete: work for every
# maintenance operation.
EVENTS = """{{ config(materialized='incremental') }}
select cast({{ var('run', 0) }} * 10 + id as bigint) as id from range(3)"""
BIG = """{{ config(materialized='incremental') }}
select cast({{ var('run', 0) }} * 1000 + id as bigint) as id from range(50)"""
PYTHON = """def model(dbt, session):
    return session.range(3)
"""
RUN_SQL = "{% macro run_sql(sql) %}{% do run_query(sql) %}{% endmacro %}"
OPERATIONS = [
    ["ducklake_flush_inlined_data"],
    ["ducklake_merge_adjacent_files", "--args", "{min_file_size: 1}"],
    ["ducklake_rewrite_data_files", "--args", "{delete_threshold: 0.01}"],
    ["ducklake_expire_snapshots", "--args", "{versions: [1]}"],
    ["ducklake_expire_snapshots", "--args", "{older_than: '2999-01-01 00:00:00+00'}"],
    ["ducklake_cleanup_old_files", "--args", "{cleanup_all: true}"],
    ["ducklake_delete_orphaned_files", "--args", "{older_than: '2999-01-01 00:00:00+00'}"],
    ["ducklake_checkpoint"],
    ["ducklake_set_option", "--args", "{option: target_file_size, value: 1KB}"],
]
TABLES = ("ducklake_snapshot", "ducklake_data_file", "ducklake_delete_file",
          "ducklake_files_scheduled_for_deletion", "ducklake_metadata")


class PinnedWrites:
    """The test; subclasses choose the catalog."""

    @pytest.fixture(scope="class")
    def dbt_profile_data(self, unique_schema, dbt_profile_target):  # noqa: ANN001, ANN201
        target = dict(dbt_profile_target, schema=unique_schema)
        pinned = dict(target, snapshot_version="{{ env_var('DUCKLAKE_TEST_PIN', '0') | "
                                               "as_number }}")
        return {"test": {"outputs": {"default": target, "pinned": pinned},
                         "target": "default"}}

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"events.sql": EVENTS, "big.sql": BIG}

    @pytest.fixture(scope="class")
    def macros(self):  # noqa: ANN201
        return {"run_sql.sql": RUN_SQL}

    def lake_state(self, project) -> tuple[Any, ...]:  # noqa: ANN001
        """The catalog rows maintenance changes and every file under the data path."""
        creds = project.adapter.config.credentials
        lake = Catalog.open(creds.catalog, metadata_schema=creds.metadata_schema)
        try:
            with lake.read() as conn:
                rows = tuple(tuple(sorted(map(repr, conn.execute(
                    text(f"SELECT * FROM {lake.t(name)}"))))) for name in TABLES)
            files = tuple(sorted(
                (os.path.join(root, name), os.path.getsize(os.path.join(root, name)),
                 os.path.getmtime(os.path.join(root, name)))
                for root, _, names in os.walk(lake.data_path) for name in names))
            return rows, files, lake.data_path
        finally:
            lake.close()

    def test_a_pinned_target_writes_nothing(self, project):  # noqa: ANN001
        for run in range(3):
            run_dbt(["run", "--vars", f"{{run: {run}}}"])
        schema = project.test_schema
        project.run_sql(f"delete from `{schema}.big` where id < 2040")
        before = self.lake_state(project)
        rows, _, data_path = before
        pin = max(int(r.split(",")[0].strip("(")) for r in rows[0])
        big_dir = next(root for root, _, names in os.walk(data_path)
                       if "big" in root and any(n.endswith(".parquet") for n in names))
        statements = [
            f"insert overwrite directory '{big_dir}' using parquet select 1 as id",
            f"create table spark_catalog.default.stray using parquet location "
            f"'{data_path}stray' as select 1 as id",
            f"add jar '{data_path}x.jar'",
        ]
        os.environ["DUCKLAKE_TEST_PIN"] = str(pin)
        try:
            for operation in OPERATIONS:
                _, out = run_dbt_and_capture(["run-operation", *operation, "--target", "pinned"],
                                             expect_pass=False)
                assert f"is not a read, and this connection is pinned to snapshot {pin}" in out
                assert "Remove snapshot_version" in out
                assert self.lake_state(project) == before, operation
            for statement in statements:
                _, out = run_dbt_and_capture(
                    ["run-operation", "run_sql", "--args", f"{{sql: \"{statement}\"}}",
                     "--target", "pinned"], expect_pass=False)
                assert f"`{statement[:30]}" in out and f"pinned to snapshot {pin}" in out
                assert self.lake_state(project) == before, statement
            # a Python model is refused before its code runs (it could write files itself)
            with open(os.path.join(project.project_root, "models", "py.py"), "w") as handle:
                handle.write(PYTHON)
            _, out = run_dbt_and_capture(["run", "-s", "py", "--target", "pinned"],
                                         expect_pass=False)
            assert f"pinned to snapshot {pin}" in out
            assert self.lake_state(project) == before
        finally:
            del os.environ["DUCKLAKE_TEST_PIN"]
        # the unpinned target still maintains the same lake
        _, out = run_dbt_and_capture(["run-operation", "ducklake_flush_inlined_data"])
        assert "flushed 9 row(s)" in out and self.lake_state(project) != before


class TestPinnedWritesSqlite(PinnedWrites):
    pass


@pytest.mark.postgres
class TestPinnedWritesPostgres(PinnedWrites):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory) -> Iterator[dict[str, Any]]:  # noqa: ANN001
        yield from postgres_profile_target(tmp_path_factory, threads=1)
