{#- Lake maintenance, as DuckDB's ducklake_* functions do it, with Spark doing the data work.
    Each macro runs one operation, logs its one-line summary and returns the result as a dict.
    From the command line:
      dbt run-operation ducklake_flush_inlined_data
      dbt run-operation ducklake_merge_adjacent_files --args '{table: orders, max_compacted_files: 50}'
      dbt run-operation ducklake_expire_snapshots --args '{older_than: "2026-01-01 00:00:00+00"}'
      dbt run-operation ducklake_checkpoint
    `relation` (a ref/source) or `schema`/`table` names pick what flush, merge and rewrite touch;
    with neither they run over every table of the lake. -#}

{% macro ducklake__run_maintenance(operation, arguments={}) -%}
  {%- set result = adapter.ducklake_maintenance(operation, arguments) -%}
  {%- do log(result['summary'], info=true) -%}
  {{- return(result) -}}
{%- endmacro %}

{% macro ducklake__table_scope(relation, schema, table) -%}
  {%- if relation is not none -%}
    {{- return({'schema': relation.schema, 'table': relation.identifier}) -}}
  {%- endif -%}
  {{- return({'schema': schema, 'table': table}) -}}
{%- endmacro %}

{#- Write inlined rows and inlined deletes to Parquet (history and change feed unchanged). -#}
{% macro ducklake_flush_inlined_data(relation=none, schema=none, table=none) -%}
  {{- return(ducklake__run_maintenance('flush_inlined_data', ducklake__table_scope(relation, schema, table))) -}}
{%- endmacro %}

{#- Merge small files without deletes, within a partition and schema version, up to the
    target_file_size option (or max_file_size); min_file_size skips tiny files. -#}
{% macro ducklake_merge_adjacent_files(relation=none, schema=none, table=none, min_file_size=none, max_file_size=none, max_compacted_files=none) -%}
  {%- set args = ducklake__table_scope(relation, schema, table) -%}
  {%- do args.update({'min_file_size': min_file_size, 'max_file_size': max_file_size, 'max_compacted_files': max_compacted_files}) -%}
  {{- return(ducklake__run_maintenance('merge_adjacent_files', args)) -}}
{%- endmacro %}

{#- Rewrite files whose deleted fraction is at least delete_threshold (default: the
    rewrite_delete_threshold option, 0.95). -#}
{% macro ducklake_rewrite_data_files(relation=none, schema=none, table=none, delete_threshold=none) -%}
  {%- set args = ducklake__table_scope(relation, schema, table) -%}
  {%- do args.update({'delete_threshold': delete_threshold}) -%}
  {{- return(ducklake__run_maintenance('rewrite_data_files', args)) -}}
{%- endmacro %}

{#- Forget snapshots older than older_than (default: the expire_older_than option) or the
    listed versions; the latest snapshot is never expired. -#}
{% macro ducklake_expire_snapshots(older_than=none, versions=none, dry_run=false) -%}
  {{- return(ducklake__run_maintenance('expire_snapshots', {'older_than': older_than, 'versions': versions, 'dry_run': dry_run})) -}}
{%- endmacro %}

{#- Delete files scheduled for deletion before older_than (default: now minus the
    delete_older_than option, 2 days), or all of them with cleanup_all. -#}
{% macro ducklake_cleanup_old_files(older_than=none, cleanup_all=false, dry_run=false) -%}
  {{- return(ducklake__run_maintenance('cleanup_old_files', {'older_than': older_than, 'cleanup_all': cleanup_all, 'dry_run': dry_run})) -}}
{%- endmacro %}

{#- Delete Parquet files under the data path the catalog does not know, older than older_than
    (default: now minus delete_older_than). -#}
{% macro ducklake_delete_orphaned_files(older_than=none, dry_run=false) -%}
  {{- return(ducklake__run_maintenance('delete_orphaned_files', {'older_than': older_than, 'dry_run': dry_run})) -}}
{%- endmacro %}

{#- Flush, expire, merge, rewrite, cleanup and orphans, in DuckDB's CHECKPOINT order. -#}
{% macro ducklake_checkpoint() -%}
  {{- return(ducklake__run_maintenance('checkpoint', {})) -}}
{%- endmacro %}

{#- Set a lake option globally, for a schema, or for a table (relation, or schema/table). -#}
{% macro ducklake_set_option(option, value, relation=none, schema=none, table=none) -%}
  {%- set scope = ducklake__table_scope(relation, schema, table) -%}
  {%- set message = adapter.ducklake_set_option(option, value, scope['schema'], scope['table']) -%}
  {%- do log(message, info=true) -%}
  {{- return(message) -}}
{%- endmacro %}

{#- The model config post_commit_maintenance (e.g. ['flush_inlined_data', 'merge_adjacent_files']),
    run on the model's table once it has committed. -#}
{% macro ducklake__post_commit_maintenance(relation) -%}
  {%- set operations = config.get('post_commit_maintenance', none) -%}
  {%- if operations -%}
    {%- for result in adapter.ducklake_post_commit_maintenance(relation, operations) -%}
      {%- do log(relation ~ ': ' ~ result['summary'], info=true) -%}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro %}
