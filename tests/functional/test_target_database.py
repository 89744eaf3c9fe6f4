"""`target.database` on a lake: the idioms of dbt packages (``adapter.get_relation(database=
target.database, ...)``, ``api.Relation.create(database=target.database, ...)``, dbt_utils'
get_relations_by_pattern through dispatch), with and without a lake name in the profile."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

pytestmark = [pytest.mark.spark]

BASE = "{{ config(materialized='table') }}\nselect 1 as id"

PROBE = """
{% if execute %}
  {% set found = adapter.get_relation(database=target.database, schema=target.schema,
                                      identifier='base') %}
  {% set upper = adapter.get_relation(target.database, target.schema, 'BASE') %}
  {% set missing = adapter.get_relation(database=target.database, schema=target.schema,
                                        identifier='nope') %}
  {% set patterned = relations_by_pattern(target.schema, 'ba%') %}
{% else %}
  {% set found, upper, missing, patterned = none, none, none, [] %}
{% endif %}
{% set made = api.Relation.create(database=target.database, schema=target.schema,
                                  identifier='base') %}
select '{{ target.database }}' as db,
       {{ 1 if found else 0 }} as found, {{ 1 if upper else 0 }} as upper,
       {{ 1 if missing else 0 }} as missing,
       '{{ patterned | map(attribute='identifier') | join(',') }}' as patterned,
       '{{ patterned | map(attribute='type') | join(',') }}' as types,
       id
from {{ made }}
"""

# dbt_utils.get_relations_by_pattern's own steps (dbt_utils is not installed here): the
# SQL from get_tables_by_pattern_sql, dispatched in the dbt_utils namespace as a project with
# `dispatch: search_order: [project, 'dbt', 'dbt_utils']` would, and relations made of its rows.
RELATIONS_BY_PATTERN = """
{% macro relations_by_pattern(schema_pattern, table_pattern, exclude='',
                              database=target.database) %}
  {%- call statement('get_tables', fetch_result=True) %}
    {{ adapter.dispatch('get_tables_by_pattern_sql', 'dbt_utils')(
         schema_pattern, table_pattern, exclude, database) }}
  {%- endcall -%}
  {%- set relations = [] -%}
  {%- for row in load_result('get_tables')['table'] -%}
    {%- do relations.append(api.Relation.create(
          database=database, schema=row.table_schema, identifier=row.table_name,
          type=row.table_type)) -%}
  {%- endfor -%}
  {{ return(relations) }}
{% endmacro %}
"""


class TargetDatabase:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"base.sql": BASE, "bar_view.sql": "select * from {{ ref('base') }}",
                "other.sql": BASE, "probe.sql": PROBE}

    @pytest.fixture(scope="class")
    def macros(self):  # noqa: ANN201
        return {"relations_by_pattern.sql": RELATIONS_BY_PATTERN}

    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"dispatch": [{"macro_namespace": "dbt_utils", "search_order": ["test", "dbt"]}],
                "models": {"test": {"bar_view": {"+materialized": "view"}}}}

    def probe(self, project) -> tuple:  # noqa: ANN001
        run_dbt(["run", "-s", "base", "bar_view", "other"])
        run_dbt(["run", "-s", "probe"])
        return tuple(project.run_sql(f"select * from `{project.test_schema}.probe`",
                                     fetch="one"))


class TestTargetDatabaseUnnamed(TargetDatabase):
    def test_idioms(self, project):  # noqa: ANN001
        # empty, as dbt-spark renders it; relations carry no database
        assert self.probe(project) == ("", 1, 1, 0, "bar_view,base", "view,table", 1)


class TestTargetDatabaseNamed(TargetDatabase):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target):  # noqa: ANN001, ANN201
        return {**dbt_profile_target, "lake": "Warehouse"}

    def test_idioms(self, project):  # noqa: ANN001
        assert self.probe(project) == ("Warehouse", 1, 1, 0, "bar_view,base", "view,table", 1)
        # nodes and sources still carry no database: relations are schema.table
        assert project.adapter.config.credentials.database is None

    def test_another_database_is_refused(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "base"])
        write_file("{{ config(materialized='table') }}\n"
                   "{% if execute %}{% do adapter.get_relation(database='elsewhere', "
                   "schema=target.schema, identifier='base') %}{% endif %}\nselect 1 as id",
                   project.project_root, "models", "elsewhere.sql")
        _, out = run_dbt_and_capture(["run", "-s", "elsewhere"], expect_pass=False)
        assert "database 'elsewhere' is not this lake" in out
        assert "Accepted: none, target.database ('Warehouse')" in out
