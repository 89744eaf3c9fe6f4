{#- Time travel. A lake relation pinned to a snapshot renders as one Spark identifier with a
    suffix, `schema.table@v42` or `schema.table@ts:<time>`; the connection registers it as a
    temp view of the table at that snapshot when a statement first names it. -#}

{#- The lake name of a relation, a ref()/source() result or a 'schema.table' string. -#}
{% macro ducklake__lake_name(relation) -%}
  {%- if relation is string -%}
    {{- relation | replace('`', '') -}}
  {%- else -%}
    {{- relation.schema ~ '.' ~ relation.identifier -}}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__quoted(name) -%}
  `{{ name | replace('`', '``') }}`
{%- endmacro %}

{#- The text of a change-feed or time-travel bound: a snapshot id or a timestamp. -#}
{% macro ducklake__bound(value) -%}
  {%- if value is none -%}
  {%- elif value is number -%}
    {{- value | int -}}
  {%- else -%}
    {{- value | string -}}
  {%- endif -%}
{%- endmacro %}

{#- `relation` as it was at a snapshot: `version` picks exactly that snapshot, `timestamp` the
    latest snapshot at or before it. An expired or unknown snapshot fails the statement with
    the range of snapshots the lake holds. -#}
{% macro ducklake_at(relation, version=none, timestamp=none) -%}
  {#- at parse time var() gives none for vars passed only to later runs: fail at execution -#}
  {%- if version is none and timestamp is none and execute -%}
    {% do exceptions.raise_compiler_error("ducklake_at: pass version= (a snapshot id) or timestamp=") %}
  {%- elif version is not none and timestamp is not none -%}
    {% do exceptions.raise_compiler_error("ducklake_at: pass version= or timestamp=, not both (got " ~ version ~ " and " ~ timestamp ~ ")") %}
  {%- endif -%}
  {%- set name = ducklake__lake_name(relation) -%}
  {%- if version is not none -%}
    {%- if version is not number and not (version | string).isdigit() and execute -%}
      {% do exceptions.raise_compiler_error("ducklake_at: version must be a snapshot id, got " ~ version) %}
    {%- endif -%}
    {{- ducklake__quoted(name ~ '@v' ~ (version | int)) -}}
  {%- elif timestamp is none -%}
    {{- ducklake__quoted(name) -}}
  {%- else -%}
    {{- ducklake__quoted(name ~ '@ts:' ~ ducklake__bound(timestamp)) -}}
  {%- endif -%}
{%- endmacro %}

{#- ref() at a snapshot: `ducklake_ref_at('orders', version=3)`. -#}
{% macro ducklake_ref_at(model_name, version=none, timestamp=none) -%}
  {{- ducklake_at(ref(model_name), version=version, timestamp=timestamp) -}}
{%- endmacro %}

{#- Every snapshot of the lake (up to the pinned one when the profile pins a snapshot):
    snapshot_id, snapshot_time, schema_version, changes (a map from the kind of change to the
    ids or names it touched, as DuckDB's ducklake_snapshots() shows it), author,
    commit_message, commit_extra_info. Select from it: `select * from {{ ducklake_snapshots() }}`. -#}
{% macro ducklake_snapshots() -%}
  `@snapshots`
{%- endmacro %}

{#- The id of the current snapshot (the pinned one when the profile pins a snapshot), as a
    scalar subquery: `select {{ ducklake_current_snapshot() }} as v`. -#}
{% macro ducklake_current_snapshot() -%}
  (select snapshot_id from `@current_snapshot`)
{%- endmacro %}
