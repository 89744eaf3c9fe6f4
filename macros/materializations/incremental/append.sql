{#- append: INSERT the new rows by column name, one DuckLake snapshot (rows up to the
    inlining limit are inlined in the catalog, so small frequent appends write no Parquet).
    incremental_predicates do not apply to an append. -#}
{% macro ducklake__get_incremental_append_sql(arg_dict) -%}
  {%- set dest_cols_csv = get_quoted_csv(arg_dict['dest_columns'] | map(attribute="name")) -%}
  insert into {{ arg_dict['target_relation'] }} ({{ dest_cols_csv }})
  select {{ dest_cols_csv }} from {{ arg_dict['temp_relation'] }}
{%- endmacro %}
