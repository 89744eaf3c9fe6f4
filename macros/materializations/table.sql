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
    {{ adapter.drop_relation(existing_relation) }}
  {%- endif -%}

  {%- if config.get('contract').enforced and language == 'sql' -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif -%}

  {%- call statement('main', language=language) -%}
    {{- create_table_as(False, target_relation, compiled_code, language) -}}
  {%- endcall -%}

  {%- if config.get('contract').enforced -%}
    {{ ducklake_enforce_not_null(target_relation) }}
  {%- endif -%}

  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {% do apply_grants(target_relation, grant_config, should_revoke=false) %}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

{% macro ducklake_enforce_not_null(relation) -%}
  {%- set not_null = [] -%}
  {%- for name, column in model.columns.items() -%}
    {%- for constraint in column.get('constraints', []) -%}
      {%- if constraint.type == 'not_null' -%}{%- do not_null.append(name) -%}{%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for constraint in model.get('constraints', []) -%}
    {%- if constraint.type == 'not_null' -%}
      {%- for name in constraint.columns -%}{%- do not_null.append(name) -%}{%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for name in not_null -%}
    {%- call statement('not_null_' ~ loop.index) -%}
      alter table {{ relation }} alter column {{ adapter.quote(name) }} set not null
    {%- endcall -%}
  {%- endfor -%}
{%- endmacro %}

{% macro ducklake_validate_file_format() -%}
  {%- set file_format = config.get('file_format') -%}
  {%- if file_format is not none and file_format | lower not in ['parquet', 'ducklake'] -%}
    {% do exceptions.raise_compiler_error("Invalid file_format '" ~ file_format ~ "' for a ducklake model: DuckLake stores tables as Parquet. Accepted values: parquet, ducklake (or leave it unset)") %}
  {%- endif -%}
{%- endmacro %}
