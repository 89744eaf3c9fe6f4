{#- insert_overwrite: replace the partitions present in the new rows (dynamic partition
    overwrite), one DuckLake snapshot. On a table without a partition spec this would replace
    the whole table, a classic surprise with dbt-spark; it is refused unless the model says
    so with overwrite_whole_table: true. -#}
{% macro ducklake__get_incremental_insert_overwrite_sql(arg_dict) -%}
  {%- set target = arg_dict['target_relation'] -%}
  {%- set keys = adapter.ducklake_partition_keys(target) -%}
  {%- if not keys and not config.get('overwrite_whole_table', false) -%}
    {% do exceptions.raise_compiler_error("incremental_strategy 'insert_overwrite' replaces the partitions present in the new rows, but " ~ target ~ " has no partition spec, so it would replace the whole table. Set partition_by (and run with --full-refresh to lay the table out), or set overwrite_whole_table: true to replace the whole table on every run") %}
  {%- endif -%}
  {%- set dest_cols_csv = get_quoted_csv(arg_dict['dest_columns'] | map(attribute="name")) -%}
  {%- if keys %}
  set spark.sql.sources.partitionOverwriteMode = dynamic;
  {%- endif %}
  insert overwrite table {{ target }}
  select {{ dest_cols_csv }} from {{ arg_dict['temp_relation'] }}
  {%- if keys -%}
  ;
  reset spark.sql.sources.partitionOverwriteMode
  {%- endif -%}
{%- endmacro %}
