"""dbt-tests-adapter's `hooks` group: model, seed and run hooks.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.hooks import test_model_hooks as model_hooks
from dbt.tests.adapter.hooks.test_model_hooks import (
    BaseDuplicateHooksInConfigs,
    BaseHookRefs,
    BaseHooksRefsOnSeeds,
    BasePrePostModelHooks,
    BasePrePostModelHooksInConfig,
    BasePrePostModelHooksInConfigKwargs,
    BasePrePostModelHooksInConfigWithCount,
    BasePrePostModelHooksOnSeeds,
    BasePrePostModelHooksOnSeedsPlusPrefixed,
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace,
)
from dbt.tests.adapter.hooks.test_run_hooks import BaseAfterRunHooks, BasePrePostRunHooks

pytestmark = [pytest.mark.spark]


# The base classes assume PostgreSQL: a data/*.sql file with TEXT columns, "quoted" column
# names, `vacuum`, and a postgres target (dbname "dbt", user "root"). Same checks, our target.
_HOOK_COLUMNS = """(
    test_state string, target_dbname string, target_host string, target_name string,
    target_schema string, target_type string, target_user string, target_pass string,
    target_threads int, run_started_at string, invocation_id string, thread_id string)"""
_HOOK_FIELDS = ["test_state", "target_dbname", "target_host", "target_name", "target_schema",
                "target_threads", "target_type", "target_user", "target_pass",
                "run_started_at", "invocation_id", "thread_id"]
_TOUCH_HOOK = {"sql": "select count(*) from {{ this.schema }}.on_model_hook",
               "transaction": False}


def _check_ctx(ctx, state, project):  # noqa: ANN001, ANN202
    assert ctx["test_state"] == state
    assert ctx["target_name"] == "default"
    assert ctx["target_schema"] == project.test_schema
    assert ctx["target_threads"] == 4
    assert ctx["target_type"] == "ducklake"
    assert ctx["target_pass"] == ""
    assert ctx["run_started_at"], "run_started_at was not set"
    assert ctx["invocation_id"], "invocation_id was not set"
    assert ctx["thread_id"].startswith("Thread-") or ctx["thread_id"] == "MainThread"


class _SparkModelHooks:
    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):  # noqa: ANN001, ANN201
        project.run_sql(f"drop table if exists {project.test_schema}.on_model_hook")
        project.run_sql(f"create table {project.test_schema}.on_model_hook {_HOOK_COLUMNS}")

    def get_ctx_vars(self, state, count, project):  # noqa: ANN001, ANN201
        fields = ", ".join(f"`{f}`" for f in _HOOK_FIELDS)
        vals = project.run_sql(f"select {fields} from {project.test_schema}.on_model_hook "
                               f"where test_state = '{state}'", fetch="all")
        assert len(vals) == count, f"expected {count} {state} rows in hooks table: {vals}"
        return [dict(zip(_HOOK_FIELDS, val)) for val in vals]

    def check_hooks(self, state, project, host, count=1):  # noqa: ANN001, ANN201
        for ctx in self.get_ctx_vars(state, count, project):
            _check_ctx(ctx, state, project)


_PROJECT_HOOKS = {
    "pre-hook": [model_hooks.MODEL_PRE_HOOK, _TOUCH_HOOK],
    "post-hook": [_TOUCH_HOOK, model_hooks.MODEL_POST_HOOK],
}


class TestPrePostModelHooks(_SparkModelHooks, BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"test": _PROJECT_HOOKS}}


class TestPrePostModelHooksUnderscores(_SparkModelHooks, BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"test": {"pre_hook": _PROJECT_HOOKS["pre-hook"],
                                    "post_hook": _PROJECT_HOOKS["post-hook"]}}}


class TestHookRefs(_SparkModelHooks, BaseHookRefs):
    pass


class TestPrePostModelHooksOnSeeds(BasePrePostModelHooksOnSeeds):
    pass


class TestHooksRefsOnSeeds(BaseHooksRefsOnSeeds):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixed(BasePrePostModelHooksOnSeedsPlusPrefixed):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixedWhitespace(
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace
):
    pass


class TestPrePostModelHooksInConfig(_SparkModelHooks, BasePrePostModelHooksInConfig):
    pass


class TestPrePostModelHooksInConfigWithCount(
    _SparkModelHooks, BasePrePostModelHooksInConfigWithCount
):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"test": _PROJECT_HOOKS}}


class TestPrePostModelHooksInConfigKwargs(_SparkModelHooks, BasePrePostModelHooksInConfigKwargs):
    pass


class TestDuplicateHooksInConfigs(BaseDuplicateHooksInConfigs):
    pass


class TestPrePostRunHooks(BasePrePostRunHooks):
    @pytest.fixture(scope="function")
    def setUp(self, project):  # noqa: ANN001, ANN201
        import os

        project.run_sql(f"drop table if exists {project.test_schema}.on_run_hook")
        project.run_sql(f"create table {project.test_schema}.on_run_hook {_HOOK_COLUMNS}")
        project.run_sql(f"drop table if exists {project.test_schema}.schemas")
        project.run_sql(f"drop table if exists {project.test_schema}.db_schemas")
        os.environ["TERM_TEST"] = "TESTING"

    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {
            "on-run-start": [
                "{{ custom_run_hook('start', target, run_started_at, invocation_id) }}",
                "create table {{ target.schema }}.start_hook_order_test ( id int )",
                "drop table {{ target.schema }}.start_hook_order_test",
                "{{ log(env_var('TERM_TEST'), info=True) }}",
            ],
            "on-run-end": [
                "{{ custom_run_hook('end', target, run_started_at, invocation_id) }}",
                "create table {{ target.schema }}.end_hook_order_test ( id int )",
                "drop table {{ target.schema }}.end_hook_order_test",
                "create table {{ target.schema }}.schemas ( schema string )",
                "insert into {{ target.schema }}.schemas (schema) values "
                "{% for schema in schemas %}( '{{ schema }}' )"
                "{% if not loop.last %},{% endif %}{% endfor %}",
                "create table {{ target.schema }}.db_schemas ( db string, schema string )",
                "insert into {{ target.schema }}.db_schemas (db, schema) values "
                "{% for db, schema in database_schemas %}('{{ db }}', '{{ schema }}' )"
                "{% if not loop.last %},{% endif %}{% endfor %}",
            ],
            "seeds": {"quote_columns": False},
        }

    def get_ctx_vars(self, state, project):  # noqa: ANN001, ANN201
        fields = ", ".join(f"`{f}`" for f in _HOOK_FIELDS)
        vals = project.run_sql(f"select {fields} from {project.test_schema}.on_run_hook "
                               f"where test_state = '{state}'", fetch="all")
        assert len(vals) == 1, f"expected one {state} row in on_run_hook: {vals}"
        return dict(zip(_HOOK_FIELDS, vals[0]))

    def check_hooks(self, state, project, host):  # noqa: ANN001, ANN201
        _check_ctx(self.get_ctx_vars(state, project), state, project)

    def assert_used_schemas(self, project):  # noqa: ANN001, ANN201
        results = project.run_sql(f"select * from {project.test_schema}.schemas", fetch="all")
        assert [r[0] for r in results] == [project.test_schema]
        results = project.run_sql(f"select * from {project.test_schema}.db_schemas",
                                  fetch="all")
        assert len(results) == 1
        # the lake is the only database: relations carry none
        assert results[0][0] in (project.database, "None", "")
        assert results[0][1] == project.test_schema


class TestAfterRunHooks(BaseAfterRunHooks):
    pass
