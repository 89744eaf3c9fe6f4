{#- Views are DuckLake views (dialect `spark`), so they survive between dbt invocations. -#}
{% materialization view, adapter='ducklake' %}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and not existing_relation.is_view -%}
    {#- replaced in the snapshot that creates the new relation -#}
    {% do adapter.cache_dropped(existing_relation) %}
  {%- endif -%}

  {%- call statement('main') -%}
    {{ get_create_view_as_sql(target_relation, sql) }}
  {%- endcall -%}

  {% do persist_docs(target_relation, model, for_columns=false) %}
  {{ run_hooks(post_hooks) }}
  {% do apply_grants(target_relation, grant_config, should_revoke=false) %}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
