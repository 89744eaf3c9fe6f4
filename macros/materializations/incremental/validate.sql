{#- Config checks first, with the accepted values in every error. -#}
{% macro ducklake_validate_incremental_strategy(strategy) -%}
  {%- set accepted = ['merge', 'append', 'delete+insert', 'insert_overwrite', 'microbatch'] -%}
  {%- if strategy not in accepted -%}
    {% do exceptions.raise_compiler_error("Invalid incremental_strategy '" ~ strategy ~ "' for a ducklake model. Accepted values: " ~ accepted | join(', ')) %}
  {%- endif -%}
  {%- if config.get('merge_update_columns') and config.get('merge_exclude_columns') -%}
    {% do exceptions.raise_compiler_error("Model cannot specify merge_update_columns and merge_exclude_columns. Please update model to use only one config") %}
  {%- endif -%}
  {%- set on_schema_change = config.get('on_schema_change', 'ignore') -%}
  {%- set schema_modes = ['ignore', 'fail', 'append_new_columns', 'sync_all_columns'] -%}
  {%- if on_schema_change not in schema_modes -%}
    {% do exceptions.raise_compiler_error("Invalid on_schema_change '" ~ on_schema_change ~ "'. Accepted values: " ~ schema_modes | join(', ')) %}
  {%- endif -%}
{%- endmacro %}
