{#- A table rebuild keeps the table's identity: one snapshot replaces its contents and alters
    its columns, so history, time travel and the change feed survive `dbt run`. No rename swap. -#}
{% materialization table, adapter='ducklake', supported_languages=['sql', 'python'] %}
  {%- set language = model['language'] -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set grant_config = config.get('grants') -%}

  {{ ducklake_validate_file_format() }}
  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and existing_relation.is_view -%}
    {#- replaced in the snapshot that creates the new relation -#}
    {% do adapter.cache_dropped(existing_relation) %}
  {%- endif -%}

  {%- if language == 'python' -%}
    {#- dbt runs a Python model only from a statement the materialization itself calls. -#}
    {%- call statement('main', language=language) -%}
      {{- create_table_as(False, target_relation, compiled_code, language) -}}
    {%- endcall -%}
  {%- else -%}
    {{ ducklake_expect_table_settings(target_relation) }}
    {{ ducklake_build_table(target_relation, compiled_code) }}
  {%- endif -%}

  {% do ducklake_finish_table(target_relation, grant_config) %}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

{#- CREATE OR REPLACE TABLE for a SQL `table` model and an SQL incremental model's first
    build: a contract's columns are checked first, and its NOT NULL columns are checked against
    the data and set in the same snapshot as the data, or nothing lands. -#}
{% macro ducklake_build_table(target_relation, compiled_code) -%}
  {%- if config.get('contract').enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif -%}
  {%- set not_null = ducklake_not_null_columns() if config.get('contract').enforced else [] -%}
  {%- if not_null -%}
    {%- set response = adapter.ducklake_replace_table(target_relation, get_select_subquery(compiled_code), not_null, config.get('sql_header', none), ducklake_partition_by()) -%}
    {%- call noop_statement('main', response, response) -%}
      {{- create_table_as(False, target_relation, compiled_code) -}}
    {%- endcall -%}
  {%- else -%}
    {%- call statement('main') -%}
      {{- create_table_as(False, target_relation, compiled_code) -}}
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}

{#- A contract's check, primary_key and unique constraints: every write of this model to
    the relation is checked over the rows it would leave in the table, before its commit (a
    violation commits nothing). The model's table_options (or tblproperties) and sorted_by:
    its writes write their files by them and set them with their commits. The adapter forgets both
    when the model ends. -#}
{% macro ducklake_expect_table_settings(relation) -%}
  {%- if model['language'] == 'sql' and config.get('contract').enforced -%}
    {% do adapter.ducklake_expect_constraints(relation, model) %}
  {%- endif -%}
  {% do adapter.ducklake_expect_table_settings(relation, config) %}
{%- endmacro %}

{% macro ducklake_not_null_columns() -%}
  {%- set not_null = [] -%}
  {%- for name, column in model.columns.items() -%}
    {%- for constraint in column.get('constraints', []) -%}
      {%- if constraint.type == 'not_null' and name not in not_null -%}{%- do not_null.append(name) -%}{%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for constraint in model.get('constraints', []) -%}
    {%- if constraint.type == 'not_null' -%}
      {%- for name in constraint.columns -%}{%- if name not in not_null -%}{%- do not_null.append(name) -%}{%- endif -%}{%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(not_null) }}
{%- endmacro %}

{% macro ducklake_validate_file_format() -%}
  {%- set file_format = config.get('file_format') -%}
  {%- if file_format is not none and file_format | lower not in ['parquet', 'ducklake'] -%}
    {% do exceptions.raise_compiler_error("Invalid file_format '" ~ file_format ~ "' for a ducklake model: DuckLake stores tables as Parquet. Accepted values: parquet, ducklake (or leave it unset)") %}
  {%- endif -%}
{%- endmacro %}
