{#- Incremental models (SQL or Python): the first run (or --full-refresh) builds the table in
    place, later runs stage the new rows as a Spark temp view and apply them with one statement per strategy —
    MERGE INTO, INSERT INTO, or DELETE + INSERT — each one DuckLake snapshot. -#}
{% materialization incremental, adapter='ducklake', supported_languages=['sql', 'python'] %}
  {%- set language = model['language'] -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set strategy = config.get('incremental_strategy') or 'merge' -%}
  {%- set unique_key = config.get('unique_key') -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set grant_config = config.get('grants') -%}
  {{ ducklake_validate_incremental_strategy(strategy) }}
  {{ ducklake_validate_file_format() }}

  {{ run_hooks(pre_hooks) }}
  {{ ducklake_expect_table_settings(target_relation) }}

  {%- if existing_relation is none or existing_relation.is_view or should_full_refresh() -%}
    {%- if existing_relation is not none and existing_relation.is_view -%}
      {#- replaced in the snapshot that creates the table -#}
      {% do adapter.cache_dropped(existing_relation) %}
    {%- endif -%}
    {%- if language == 'python' -%}
      {%- call statement('main', language=language) -%}
        {{ create_table_as(False, target_relation, compiled_code, language) }}
      {%- endcall -%}
    {%- else -%}
      {{ ducklake_build_table(target_relation, compiled_code) }}
    {%- endif -%}
  {%- else -%}
    {%- if config.get('contract').enforced and language == 'sql' -%}
      {#- The table's NOT NULL columns reject NULLs on every write; the columns are checked here. -#}
      {{ get_assert_columns_equivalent(sql) }}
    {%- endif -%}
    {%- set partition_by = ducklake_partition_by() -%}
    {%- if partition_by -%}
      {#- A changed spec lays out new files only (no rewrite); an unchanged one commits nothing. -#}
      {%- call statement('set_partitioning') -%}
        alter table {{ target_relation }} set partitioned by ({{ partition_by | join(', ') }})
      {%- endcall -%}
    {%- endif -%}
    {%- set temp_relation = make_temp_relation(target_relation) -%}
    {%- call statement('create_temp_relation', language=language) -%}
      {{ create_table_as(True, temp_relation, compiled_code, language) }}
    {%- endcall -%}
    {%- set dest_columns = process_schema_changes(on_schema_change, temp_relation, existing_relation) -%}
    {%- if not dest_columns -%}
      {%- set dest_columns = adapter.get_columns_in_relation(existing_relation) -%}
    {%- endif -%}
    {%- set incremental_predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
    {%- set strategy_sql_macro_func = adapter.get_incremental_strategy_macro(context, strategy) -%}
    {%- set strategy_arg_dict = ({'target_relation': target_relation, 'temp_relation': temp_relation, 'unique_key': unique_key, 'dest_columns': dest_columns, 'incremental_predicates': incremental_predicates}) -%}
    {%- call statement('main') -%}
      {{ strategy_sql_macro_func(strategy_arg_dict) }}
    {%- endcall -%}
    {%- do adapter.drop_relation(temp_relation) -%}
  {%- endif -%}

  {% do ducklake_finish_table(target_relation, grant_config) %}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
