{#- Seeds load the CSV into a DataFrame and commit it in one snapshot; a reload keeps the
    table's identity unless --full-refresh asks for a new table. -#}
{% materialization seed, adapter='ducklake' %}
  {%- set identifier = model['alias'] -%}
  {%- set full_refresh_mode = (should_full_refresh()) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}

  {{ run_hooks(pre_hooks) }}

  {%- if old_relation is not none and old_relation.is_view -%}
    {#- replaced in the snapshot that creates the new relation -#}
    {% do adapter.cache_dropped(old_relation) %}
  {%- endif -%}

  {%- set column_types = config.get('column_types', {}) -%}
  {%- set rows = adapter.ducklake_load_seed(target_relation, agate_table, column_types, full_refresh_mode, config.get('quote_columns'), config.get('delimiter', ',')) -%}
  {% call noop_statement('main', 'INSERT ' ~ rows, 'INSERT', rows) %}
    -- seed {{ target_relation }} loaded: {{ rows }} rows
  {% endcall %}

  {% do ducklake_finish_table(target_relation, grant_config) %}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
