"""A model's own `spark_conf` (its statements only, restored after) and `grants`, which a
lake cannot honour (refused, or a warning with `on_grants: warn`)."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

pytestmark = [pytest.mark.spark]

CONF_KEY = "spark.ducklake.test.marker"
# Spark substitutes ${key} in a statement with the session's setting (with nothing when the
# setting is unset)
SEES_MARKER = ("{{ config(materialized='table') }}\n"
               f"select '${{{CONF_KEY}}}' as marker, cast('x1' as int) as lenient")
PLAIN = ("{{ config(materialized='table') }}\n"
         f"select '${{{CONF_KEY}}}' as marker")


def session_conf(project) -> dict[str, str]:  # noqa: ANN001
    """The settings of the SparkSession the project's models run in."""
    with project.adapter.connection_named("__test"):
        return dict(project.adapter.runtime().spark.conf.getAll)


class TestModelSparkConf:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        conf = {CONF_KEY: "on", "spark.sql.ansi.enabled": False}
        models = {"with_conf.sql": "{{ config(spark_conf=" + repr(conf) + ") }}\n"
                                   + SEES_MARKER}
        models.update({f"plain_{i}.sql": PLAIN for i in range(3)})
        return models

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target):  # noqa: ANN001, ANN201
        return {**dbt_profile_target, "threads": 4}

    def test_applied_to_the_model_only(self, project):  # noqa: ANN001
        schema = project.test_schema
        before = session_conf(project)
        run_dbt(["run"])  # four threads: the plain models run beside it, never during it
        row = project.run_sql(f"select marker, lenient from `{schema}.with_conf`", fetch="one")
        # the setting is visible in the model's statement: the marker, and ANSI mode off
        # (an invalid cast is NULL instead of an error)
        assert tuple(row) == ("on", None)
        for i in range(3):  # unset: Spark substitutes nothing
            marker = project.run_sql(f"select marker from `{schema}.plain_{i}`",
                                     fetch="one")[0]
            assert marker == ""
        # and gone after: unset again, and ANSI mode as it was
        after = session_conf(project)
        assert CONF_KEY not in after
        assert after.get("spark.sql.ansi.enabled") == before.get("spark.sql.ansi.enabled")

    def test_failing_model_restores_too(self, project):  # noqa: ANN001
        write_file("{{ config(spark_conf={'" + CONF_KEY + "': 'failing'}) }}\n"
                   "select no_such_column from range(1)",
                   project.project_root, "models", "fails.sql")
        run_dbt(["run", "-s", "fails"], expect_pass=False)
        assert CONF_KEY not in session_conf(project)

    def test_static_and_malformed_settings_fail_clearly(self, project):  # noqa: ANN001
        write_file("{{ config(spark_conf={'spark.sql.warehouse.dir': '/tmp/x'}) }}\n"
                   "select 1 as id", project.project_root, "models", "static.sql")
        _, out = run_dbt_and_capture(["run", "-s", "static"], expect_pass=False)
        assert "Spark cannot change spark.sql.warehouse.dir while it runs" in out
        assert "belong in the profile's spark_conf" in out
        write_file("{{ config(spark_conf='spark.sql.ansi.enabled=false') }}\nselect 1 as id",
                   project.project_root, "models", "static.sql")
        _, out = run_dbt_and_capture(["run", "-s", "static"], expect_pass=False)
        assert "spark_conf of a model is a mapping of Spark SQL settings" in out


class TestGrants:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"granted.sql": "{{ config(materialized='table', "
                               "grants={'select': ['reporter']}) }}\nselect 1 as id",
                "granted_view.sql": "{{ config(materialized='view', grants={'select': ['r']}, "
                                    "on_grants='warn') }}\nselect 1 as id",
                "bad_value.sql": "{{ config(grants={'select': ['r']}, on_grants='ignore') }}"
                                 "\nselect 1 as id"}

    def test_refused_by_default(self, project):  # noqa: ANN001
        _, out = run_dbt_and_capture(["run", "-s", "granted"], expect_pass=False)
        assert "model.test.granted has grants ({'select': ['reporter']}), but a DuckLake lake " \
               "has no per-table privileges" in out
        assert "set `on_grants: warn`" in out and "(accepted: error, warn)" in out
        # refused before anything was built
        with project.adapter.connection_named("__test"):
            assert project.adapter.get_relation(None, project.test_schema, "granted") is None

    def test_warn_builds_with_a_warning(self, project):  # noqa: ANN001
        _, out = run_dbt_and_capture(["run", "-s", "granted_view"])
        assert "model.test.granted_view has grants" in out
        assert "(on_grants: warn: built without them)" in out
        with project.adapter.connection_named("__test"):
            assert project.adapter.get_relation(None, project.test_schema, "granted_view")

    def test_unknown_on_grants(self, project):  # noqa: ANN001
        _, out = run_dbt_and_capture(["run", "-s", "bad_value"], expect_pass=False)
        assert "on_grants of model.test.bad_value: got 'ignore'; accepted: error, warn" in out
