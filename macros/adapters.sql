{#- Relations, schemas and columns. Relations render as one identifier, `schema.table`; the
    statements below are carried out by the lake engine, one DuckLake snapshot each. -#}

{% macro ducklake__create_schema(relation) -%}
  {%- call statement('create_schema') -%}
    create schema if not exists {{ adapter.quote(relation.schema) }}
  {%- endcall -%}
{%- endmacro %}

{% macro ducklake__drop_schema(relation) -%}
  {%- call statement('drop_schema') -%}
    drop schema if exists {{ adapter.quote(relation.schema) }} cascade
  {%- endcall -%}
{%- endmacro %}

{% macro ducklake__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if language == 'sql' -%}
    {%- set sql_header = config.get('sql_header', none) -%}
    {{ sql_header if sql_header is not none }}
    {%- if temporary -%}
      create or replace temporary view {{ relation }} as {{ compiled_code }}
    {%- else -%}
      {%- set contract_config = config.get('contract') -%}
      {%- if contract_config and contract_config.enforced -%}
        {%- set compiled_code = get_select_subquery(compiled_code) -%}
      {%- endif -%}
      {%- set partition_by = ducklake_partition_by() %}
      create or replace table {{ relation }}
      {%- if partition_by %} partitioned by ({{ partition_by | join(', ') }}){% endif %}
      as {{ compiled_code }}
    {%- endif -%}
  {%- elif language == 'python' and temporary -%}
    {{- ducklake_py_temp_view(compiled_code=compiled_code, relation=relation) -}}
  {%- elif language == 'python' -%}
    {{- ducklake_py_write_table(compiled_code=compiled_code, target_relation=relation) -}}
  {%- else -%}
    {% do exceptions.raise_compiler_error("ducklake__create_table_as: unsupported language " ~ language ~ "; accepted: sql, python") %}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__create_view_as(relation, sql) -%}
  {%- set sql_header = config.get('sql_header', none) -%}
  {{ sql_header if sql_header is not none }}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif %}
  create or replace view {{ relation }} as {{ sql }}
{%- endmacro %}

{% macro ducklake__drop_relation(relation) -%}
  {%- call statement('drop_relation', auto_begin=False) -%}
    drop {{ 'view' if relation.type == 'view' else 'table' }} if exists {{ relation }}
  {%- endcall -%}
{%- endmacro %}

{% macro ducklake__rename_relation(from_relation, to_relation) -%}
  {%- call statement('rename_relation') -%}
    alter {{ 'view' if from_relation.type == 'view' else 'table' }} {{ from_relation }} rename to {{ to_relation }}
  {%- endcall -%}
{%- endmacro %}

{% macro ducklake__truncate_relation(relation) -%}
  {%- call statement('truncate_relation') -%}
    truncate table {{ relation }}
  {%- endcall -%}
{%- endmacro %}

{% macro ducklake__current_timestamp() -%}
  current_timestamp()
{%- endmacro %}

{% macro ducklake__get_catalog(information_schema, schemas) -%}
  {{ return(adapter.ducklake_catalog(schemas)) }}
{%- endmacro %}

{% macro ducklake__persist_docs(relation, model, for_relation=true, for_columns=true) -%}
  {%- set description = model.description if (for_relation and config.persist_relation_docs() and model.description) else none -%}
  {%- set columns = none -%}
  {%- if for_columns and config.persist_column_docs() and model.columns -%}
    {%- set existing = adapter.get_columns_in_relation(relation) | map(attribute="name") | list -%}
    {%- set columns = validate_doc_columns(relation, model.columns, existing) -%}
  {%- endif -%}
  {%- if description is not none or columns is not none -%}
    {% do adapter.ducklake_persist_docs(relation, description, columns) %}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake_py_write_table(compiled_code, target_relation) -%}
{{ compiled_code }}

# dbt-ducklake: run the model in this SparkSession and commit its result to the lake
dbt = dbtObj(ducklake_load)
df = model(dbt, spark)
ducklake_write(df)
{%- endmacro %}

{#- An incremental Python model's new rows: a temp view the strategy's statement reads. -#}
{% macro ducklake_py_temp_view(compiled_code, relation) -%}
{{ compiled_code }}

# dbt-ducklake: stage the model's rows as a temp view for the incremental strategy
dbt = dbtObj(ducklake_load)
df = model(dbt, spark)
ducklake_temp_view(df, {{ relation.render() | tojson }})
{%- endmacro %}

{% macro ducklake__alter_column_comment(relation, column_dict) -%}
  {% do adapter.ducklake_persist_docs(relation, none, column_dict) %}
{%- endmacro %}

{% macro ducklake__alter_relation_comment(relation, relation_comment) -%}
  {% do adapter.ducklake_persist_docs(relation, relation_comment, none) %}
{%- endmacro %}

{% macro ducklake__get_relation_last_modified(information_schema, relations) -%}
  {{ return(adapter.ducklake_last_modified(relations)) }}
{%- endmacro %}

{% macro ducklake__alter_relation_add_remove_columns(relation, add_columns, remove_columns) -%}
  {#- DuckLake adds and drops columns in the catalog; no data file is rewritten. -#}
  {%- if add_columns -%}
    {%- call statement('add_columns') -%}
      alter table {{ relation }} add columns ({% for column in add_columns %}{{ adapter.quote(column.name) }} {{ column.data_type }}{{ ', ' if not loop.last }}{% endfor %})
    {%- endcall -%}
  {%- endif -%}
  {%- if remove_columns -%}
    {%- call statement('drop_columns') -%}
      alter table {{ relation }} drop columns ({% for column in remove_columns %}{{ adapter.quote(column.name) }}{{ ', ' if not loop.last }}{% endfor %})
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__alter_column_type(relation, column_name, new_column_type) -%}
  {%- call statement('alter_column_type') -%}
    alter table {{ relation }} alter column {{ adapter.quote(column_name) }} type {{ new_column_type }}
  {%- endcall -%}
{%- endmacro %}

{#- dbt-spark's version runs DESCRIBE and returns its raw table; macros that call
    get_columns_in_relation (snapshots' hard_deletes, on_schema_change) need Column objects. -#}
{% macro ducklake__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}

{#- partition_by (alias partitioned_by): DuckLake partition keys, as a column name or a list of
    `col`, `year(col)`, `month(col)`, `day(col)`, `hour(col)`, `bucket(N, col)`. -#}
{% macro ducklake_partition_by() -%}
  {%- set raw = config.get('partition_by') or config.get('partitioned_by') -%}
  {%- if raw is none -%}{{ return([]) }}{%- endif -%}
  {%- if raw is string -%}{%- set raw = [raw] -%}{%- endif -%}
  {%- if raw is mapping -%}
    {% do exceptions.raise_compiler_error("partition_by for a ducklake model is a column or a list of keys such as ['region', 'year(ts)', 'bucket(4, id)'], not a mapping (BigQuery's form)") %}
  {%- endif -%}
  {{ return(raw | list) }}
{%- endmacro %}

{#- grants: a lake has no per-table privileges (access is the catalog database's roles and the
    data path's storage permissions, for the whole lake), so nothing is granted or revoked:
    an error, or a warning with the model config `on_grants: warn`. -#}
{% macro ducklake__apply_grants(relation, grant_config, should_revoke=True) -%}
  {%- if grant_config -%}
    {%- set on_grants = config.get('on_grants') if model is defined and model else none -%}
    {%- set node = model.unique_id if model is defined and model else relation | string -%}
    {% do adapter.ducklake_check_grants(grant_config, on_grants, node) %}
  {%- endif -%}
{%- endmacro %}

{#- dbt_utils' get_relations_by_pattern (and get_tables_by_pattern_sql) read
    `<database>.information_schema.tables`, which a lake does not have. With
    `dispatch: [{macro_namespace: dbt_utils, search_order: ['<your project>', 'dbt', 'dbt_utils']}]`
    in dbt_project.yml, dbt_utils finds this version ('dbt' stands for the adapter's own macros), which lists the lake's relations. -#}
{% macro ducklake__get_tables_by_pattern_sql(schema_pattern, table_pattern, exclude='', database=target.database) -%}
  {{ return(adapter.ducklake_tables_by_pattern_sql(schema_pattern, table_pattern, exclude, database)) }}
{%- endmacro %}
