{#- The change feed, as DuckDB's table_changes / table_insertions / table_deletions compute it.
    Bounds are inclusive snapshot ids or timestamps (a start time picks the earliest snapshot
    at or after it, an end time the latest at or before it); no end means the current (or
    pinned) snapshot. Each renders as one Spark identifier, `schema.table@changes:3..7`, that
    the connection registers as a temp view when a statement first names it. -#}

{% macro ducklake__feed(kind, relation, start_snapshot, end_snapshot, start_timestamp, end_timestamp) -%}
  {%- if start_snapshot is not none and start_timestamp is not none -%}
    {% do exceptions.raise_compiler_error("ducklake_table_" ~ kind ~ ": pass start_snapshot or start_timestamp, not both") %}
  {%- endif -%}
  {%- if end_snapshot is not none and end_timestamp is not none -%}
    {% do exceptions.raise_compiler_error("ducklake_table_" ~ kind ~ ": pass end_snapshot or end_timestamp, not both") %}
  {%- endif -%}
  {%- set start = start_snapshot if start_snapshot is not none else start_timestamp -%}
  {%- set end = end_snapshot if end_snapshot is not none else end_timestamp -%}
  {%- set name = ducklake__lake_name(relation) ~ '@' ~ kind ~ ':' ~ ducklake__bound(start) ~ '..' ~ ducklake__bound(end) -%}
  {{- ducklake__quoted(name) -}}
{%- endmacro %}

{#- snapshot_id, rowid, change_type (insert, delete, update_preimage, update_postimage), then
    the table's columns as of the end snapshot. -#}
{% macro ducklake_table_changes(relation, start_snapshot=none, end_snapshot=none, start_timestamp=none, end_timestamp=none) -%}
  {{- ducklake__feed('changes', relation, start_snapshot, end_snapshot, start_timestamp, end_timestamp) -}}
{%- endmacro %}

{#- snapshot_id, rowid, then the columns of every row inserted in the range. -#}
{% macro ducklake_table_insertions(relation, start_snapshot=none, end_snapshot=none, start_timestamp=none, end_timestamp=none) -%}
  {{- ducklake__feed('insertions', relation, start_snapshot, end_snapshot, start_timestamp, end_timestamp) -}}
{%- endmacro %}

{#- snapshot_id (the deleting snapshot), rowid, then the columns of every row deleted in the
    range, with the values it had. -#}
{% macro ducklake_table_deletions(relation, start_snapshot=none, end_snapshot=none, start_timestamp=none, end_timestamp=none) -%}
  {{- ducklake__feed('deletions', relation, start_snapshot, end_snapshot, start_timestamp, end_timestamp) -}}
{%- endmacro %}

{#- Change-driven incremental models: the changes of `relation` committed since this model last
    consumed them, as ducklake_table_changes renders them. The watermark (the snapshot read up
    to) is stored in commit_extra_info of the model's own data write, in the same DuckLake
    snapshot as its rows, so each change is processed exactly once across runs and failures.
    A first or --full-refresh run reads every change since the table began. Use it with an
    alias: `from {{ ducklake_changes_since_last_run(ref('orders')) }} as c`. -#}
{% macro ducklake_changes_since_last_run(relation, kind='changes') -%}
  {%- set kinds = ['changes', 'insertions', 'deletions'] -%}
  {%- if kind not in kinds -%}
    {% do exceptions.raise_compiler_error("ducklake_changes_since_last_run: kind '" ~ kind ~ "' is not one of " ~ kinds | join(', ')) %}
  {%- endif -%}
  {%- if not execute -%}
    {{- ducklake__feed(kind, relation, none, none, none, none) -}}
  {%- else -%}
    {%- set window = adapter.ducklake_changes_window(relation, model.unique_id, is_incremental()) -%}
    {%- if window.start is not none and window.start > window.end -%}
      (select * from {{ ducklake__feed(kind, relation, window.end, window.end, none, none) }} where false)
    {%- else -%}
      {{- ducklake__feed(kind, relation, window.start, window.end, none, none) -}}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
