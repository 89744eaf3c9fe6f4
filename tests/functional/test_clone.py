"""`dbt clone` into a CI schema: views over production's relations, as they are now or pinned
to the snapshot the state manifest's run left the lake at (`clone_snapshot`)."""

from __future__ import annotations

import json
import os
import shutil
from copy import deepcopy

import pytest
from conftest import postgres_profile_target
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark, pytest.mark.dbt_artifacts]  # `dbt clone` reads a state manifest

ORDERS = ("{{ config(materialized='table') }}\n"
          "select id, cast(id * 10 as bigint) as amount from range({{ var('n', 5) }})")
ORDERS_VIEW = "select * from {{ ref('orders') }} where id >= 0"


class PinnedClone:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"orders.sql": ORDERS, "orders_view.sql": ORDERS_VIEW}

    @pytest.fixture(scope="class")
    def other_schema(self, unique_schema):  # noqa: ANN001, ANN201
        return unique_schema + "_ci"

    @pytest.fixture(scope="class")
    def profiles_config_update(self, dbt_profile_target, unique_schema,  # noqa: ANN001, ANN201
                               other_schema):  # noqa: ANN001
        outputs = {"default": dbt_profile_target, "ci": deepcopy(dbt_profile_target)}
        outputs["default"]["schema"] = unique_schema
        outputs["ci"]["schema"] = other_schema
        return {"test": {"outputs": outputs, "target": "default"}}

    def save_state(self, project, name: str) -> str:  # noqa: ANN001
        path = os.path.join(project.project_root, name)
        os.makedirs(path, exist_ok=True)
        shutil.copyfile(os.path.join(project.project_root, "target", "manifest.json"),
                        os.path.join(path, "manifest.json"))
        return path

    def count(self, project, relation: str) -> int:  # noqa: ANN001
        return project.run_sql(f"select count(*) from `{relation}`", fetch="one")[0]

    def catalog(self, project) -> Catalog:  # noqa: ANN001
        credentials = project.adapter.config.credentials
        return Catalog.open(credentials.catalog, credentials.data_path,
                            metadata_schema=credentials.metadata_schema)

    def test_clone_current_and_pinned(self, project, other_schema):  # noqa: ANN001
        prod = project.test_schema
        clone = ["clone", "--state", "state", "--target", "ci"]
        run_dbt(["run"])  # production: 5 orders
        self.save_state(project, "state")
        with open(os.path.join(project.project_root, "state", "manifest.json")) as handle:
            invocation = json.load(handle)["metadata"]["invocation_id"]
        lake = self.catalog(project)
        state_snapshot = lake.latest_snapshot().snapshot_id
        # every commit of the run carries its invocation id: the last one is the pin
        extra = json.loads(lake.snapshot(version=state_snapshot).commit_extra_info)
        assert extra["invocation_id"] == invocation
        run_dbt(["run", "--vars", "{n: 8}"])  # production moves on

        # default: dbt's clone for adapters without zero-copy clones, a view per relation
        results = run_dbt(clone)
        assert len(results) == 2
        with project.adapter.connection_named("__test"):
            relations = project.adapter.list_relations(None, other_schema)
        assert sorted((r.identifier, str(r.type)) for r in relations) == [
            ("orders", "view"), ("orders_view", "view")]
        assert self.count(project, f"{other_schema}.orders") == 8

        # pinned: the relations as the state's run left them
        _, out = run_dbt_and_capture(
            [*clone, "--full-refresh", "--vars", "{ducklake_clone_snapshot: state}"])
        assert self.count(project, f"{other_schema}.orders") == 5
        assert f"at snapshot {state_snapshot}" in out
        # a view's definition is pinned, not what it reads: said, not hidden
        assert f"`{prod}.orders_view` is a view: the clone reads its definition at snapshot " \
               f"{state_snapshot}, over the relations it names as they are now" in out
        assert self.count(project, f"{other_schema}.orders_view") == 8
        run_dbt(["run", "--vars", "{n: 11}"])  # production moves on again
        assert self.count(project, f"{prod}.orders") == 11
        assert self.count(project, f"{other_schema}.orders") == 5
        # the view's stored SQL names the table at the snapshot
        view = next(v for v in lake.views(other_schema) if v.view_name == "orders")
        assert f"{prod}.orders@v{state_snapshot}" in (view.spark_sql or view.sql)

        # existing relations are kept (dbt's no-op) unless --full-refresh
        results = run_dbt([*clone, "--vars", "{ducklake_clone_snapshot: 0}"])
        assert all("no-op" in r.message.lower() for r in results)

    def test_state_of_a_run_that_committed_nothing(self, project, other_schema):  # noqa: ANN001
        run_dbt(["run", "--vars", "{n: 3}"])
        run_dbt(["compile"])  # commits nothing: the pin is the snapshot at its start
        self.save_state(project, "compiled")
        at_compile = self.catalog(project).latest_snapshot().snapshot_id
        run_dbt(["run", "--vars", "{n: 9}"])
        _, out = run_dbt_and_capture(
            ["clone", "--state", "compiled", "--target", "ci", "--full-refresh",
             "--vars", "{ducklake_clone_snapshot: state}"])
        assert self.count(project, f"{other_schema}.orders") == 3
        assert f"at snapshot {at_compile}" in out and "committed nothing" in out
        assert "the latest snapshot at or before" in out

    def test_explicit_snapshot_and_bad_values(self, project, other_schema):  # noqa: ANN001
        run_dbt(["run", "--vars", "{n: 2}"])
        self.save_state(project, "state")
        pin = self.catalog(project).latest_snapshot().snapshot_id
        run_dbt(["run", "--vars", "{n: 6}"])
        run_dbt(["clone", "--state", "state", "--target", "ci", "--full-refresh",
                 "-s", "orders", "--vars", f"{{ducklake_clone_snapshot: {pin}}}"])
        assert self.count(project, f"{other_schema}.orders") == 2
        _, out = run_dbt_and_capture(
            ["clone", "--state", "state", "--target", "ci", "--full-refresh", "-s", "orders",
             "--vars", "{ducklake_clone_snapshot: yesterday}"], expect_pass=False)
        assert "clone_snapshot: got 'yesterday'; accepted: 'current'" in out
        assert "'state', or a snapshot id" in out
        _, out = run_dbt_and_capture(
            ["clone", "--state", "state", "--target", "ci", "--full-refresh", "-s", "orders",
             "--vars", "{ducklake_clone_snapshot: 99999}"], expect_pass=False)
        assert "no snapshot with version 99999" in out

    def test_clone_onto_itself_is_refused(self, project):  # noqa: ANN001
        run_dbt(["run"])
        self.save_state(project, "self")
        before = self.count(project, f"{project.test_schema}.orders")
        _, out = run_dbt_and_capture(["clone", "--state", "self", "--full-refresh"])
        assert "skipping clone for relation" in out
        # production's table is still a table with its rows
        assert self.count(project, f"{project.test_schema}.orders") == before
        with project.adapter.connection_named("__test"):
            relation = project.adapter.get_relation(None, project.test_schema, "orders")
        assert relation is not None and relation.is_table
        _, out = run_dbt_and_capture(["run-operation", "create_or_replace_clone",
                                      "--args", "{this_relation: a, defer_relation: b}"],
                                     expect_pass=False)
        assert "DuckLake has no zero-copy table clone" in out


class TestPinnedCloneSqlite(PinnedClone):
    pass


@pytest.mark.postgres
class TestPinnedClonePostgres(PinnedClone):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory):  # noqa: ANN001, ANN201
        yield from postgres_profile_target(tmp_path_factory, threads=2)
