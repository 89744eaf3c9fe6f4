{#- The tail of the materializations that write a table (table, incremental, seed), run once
    the model's data has committed: its docs as lake comments, the post_commit_maintenance
    config on the committed table, the post-hooks (which see the table with both done), and
    the grants. dbt-core's tails also call adapter.commit(); here every statement commits its
    own DuckLake snapshot, so there is nothing to commit. Views keep their own tail (no column
    docs, no maintenance). -#}
{% macro ducklake_finish_table(target_relation, grant_config) -%}
  {% do persist_docs(target_relation, model) %}
  {% do ducklake__post_commit_maintenance(target_relation) %}
  {{ run_hooks(post_hooks) }}
  {% do apply_grants(target_relation, grant_config, should_revoke=false) %}
{%- endmacro %}
