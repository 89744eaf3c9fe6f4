{#- MERGE for incremental models, in Databricks' vocabulary (matched_condition,
    not_matched_condition, not_matched_by_source_action/condition, skip_*_step, source_alias,
    target_alias) with dbt-duckdb's names accepted as aliases (merge_update_condition,
    merge_insert_condition). The engine carries out every WHEN clause kind. -#}
{% macro ducklake__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates=none) -%}
  {%- set source_alias = config.get('source_alias') or 'DBT_INTERNAL_SOURCE' -%}
  {%- set target_alias = config.get('target_alias') or 'DBT_INTERNAL_DEST' -%}
  {%- set matched_condition = config.get('matched_condition') or config.get('merge_update_condition') -%}
  {%- set not_matched_condition = config.get('not_matched_condition') or config.get('merge_insert_condition') -%}
  {%- set by_source_action = config.get('not_matched_by_source_action') -%}
  {%- set by_source_condition = config.get('not_matched_by_source_condition') -%}
  {%- if by_source_action is not none and by_source_action | lower != 'delete' and not (by_source_action | lower).startswith('update set ') -%}
    {% do exceptions.raise_compiler_error("Invalid not_matched_by_source_action '" ~ by_source_action ~ "'. Accepted values: delete, or 'update set <column> = <expression>, ...'") %}
  {%- endif -%}
  {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
  {%- set dest_columns = adapter.get_columns_in_relation(target) -%}
  {%- set update_columns = get_merge_update_columns(config.get('merge_update_columns'), config.get('merge_exclude_columns'), dest_columns) -%}
  {%- if unique_key -%}
    {%- set keys = unique_key if (unique_key is sequence and unique_key is not string) else [unique_key] -%}
    {%- for key in keys -%}
      {%- do predicates.append(source_alias ~ '.' ~ key ~ ' = ' ~ target_alias ~ '.' ~ key) -%}
    {%- endfor -%}
  {%- else -%}
    {%- do predicates.append('FALSE') -%}
  {%- endif -%}
  merge into {{ target }} as {{ target_alias }}
  using {{ source }} as {{ source_alias }}
  on {{ predicates | join(' and ') }}
  {%- if not config.get('skip_matched_step', false) %}
  when matched {%- if matched_condition %} and ({{ matched_condition }}){% endif %} then update set
    {%- if update_columns %}
    {%- for column_name in update_columns %} {{ column_name }} = {{ source_alias }}.{{ column_name }}{{ ',' if not loop.last }}{%- endfor %}
    {%- else %} * {%- endif %}
  {%- endif %}
  {%- if not config.get('skip_not_matched_step', false) %}
  when not matched {%- if not_matched_condition %} and ({{ not_matched_condition }}){% endif %} then insert *
  {%- endif %}
  {%- if by_source_action is not none %}
  when not matched by source {%- if by_source_condition %} and ({{ by_source_condition }}){% endif %} then {{ by_source_action }}
  {%- endif %}
{%- endmacro %}
