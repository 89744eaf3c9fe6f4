{#- dbt snapshots (SCD2). dbt's own snapshot flow runs unchanged — timestamp and check
    strategies, hard_deletes (ignore, invalidate, new_record), snapshot_meta_column_names,
    dbt_valid_to_current — with the staging rows as a Spark temp view and the change applied
    by one MERGE INTO, so each `dbt snapshot` of a model is one DuckLake snapshot (two when new
    source columns must first be added to the table). dbt-spark's own snapshot
    materialization, which needs Delta, Iceberg or Hudi, is not used. -#}
{% materialization snapshot, adapter='ducklake' %}
  {%- set strategy = config.get('strategy') -%}
  {%- set accepted = ['timestamp', 'check'] -%}
  {%- if strategy not in accepted and '.' not in (strategy or '') -%}
    {% do exceptions.raise_compiler_error("Invalid snapshot strategy '" ~ strategy ~ "'. Accepted values: " ~ accepted | join(', ') ~ " (or a custom strategy macro named package.strategy)") %}
  {%- endif -%}
  {%- set hard_deletes = config.get('hard_deletes') -%}
  {%- set hard_delete_modes = ['ignore', 'invalidate', 'new_record'] -%}
  {%- if hard_deletes is not none and hard_deletes not in hard_delete_modes -%}
    {% do exceptions.raise_compiler_error("Invalid hard_deletes '" ~ hard_deletes ~ "'. Accepted values: " ~ hard_delete_modes | join(', ')) %}
  {%- endif -%}
  {#- A lake is one database: nodes carry none, and dbt's flow reads model.database. -#}
  {%- do model.setdefault('database', none) -%}
  {{ return(dbt.materialization_snapshot_default()) }}
{% endmaterialization %}

{#- The staging relation is a temp view (as an incremental model's is): it is read by the one
    MERGE, against the same table state, so nothing is written twice. -#}
{% macro ducklake__post_snapshot(staging_relation) %}
  {% do adapter.drop_relation(staging_relation) %}
{% endmacro %}
