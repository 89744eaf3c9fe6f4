{#- delete+insert: one statement, `INSERT INTO ... REPLACE ON`, so the delete and the insert
    commit as one DuckLake snapshot and the new rows are computed from the table as it was
    before the statement. A NULL key matches nothing, as in dbt's own delete+insert.
    incremental_predicates narrow the rows that may be deleted; unqualified columns in them
    are the table's. Without a unique_key (none, [] or '') nothing is deleted and the rows
    are appended, as dbt-core's default delete+insert does. The rows go in by column name
    (REPLACE ON takes no column list), so a column the query no longer selects gets NULL. -#}
{% macro ducklake__get_delete_insert_merge_sql(target, source, unique_key, dest_columns, incremental_predicates=none) -%}
  {%- set keys = unique_key if (unique_key is sequence and unique_key is not string) else [unique_key] -%}
  {%- set keys = keys | reject('none') | reject('equalto', '') | list -%}
  {%- if not keys -%}
    {{ return(ducklake__get_incremental_append_sql({'target_relation': target, 'temp_relation': source, 'dest_columns': dest_columns})) }}
  {%- endif -%}
  {%- set conditions = [] -%}
  {%- for key in keys -%}
    {%- do conditions.append('DBT_INTERNAL_DEST.' ~ key ~ ' = DBT_INTERNAL_SOURCE.' ~ key) -%}
  {%- endfor -%}
  {%- for predicate in (incremental_predicates or []) -%}
    {%- do conditions.append('(' ~ predicate ~ ')') -%}
  {%- endfor -%}
  {%- set dest_cols_csv = get_quoted_csv(dest_columns | map(attribute="name")) -%}
  insert into {{ target }} as DBT_INTERNAL_DEST by name
  replace on {{ conditions | join(' and ') }}
  (select {{ dest_cols_csv }} from {{ source }}) DBT_INTERNAL_SOURCE
{%- endmacro %}
