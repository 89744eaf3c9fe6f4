{#- microbatch: each batch replaces its event_time window, [event_time_start, event_time_end),
    with `INSERT INTO ... REPLACE WHERE` — one DuckLake snapshot per batch, so a batch that
    fails leaves the table as it was and a retried batch never duplicates rows. No
    partition_by is needed. incremental_predicates narrow the rows replaced. -#}
{% macro ducklake__get_incremental_microbatch_sql(arg_dict) -%}
  {%- set event_time = model.config.event_time -%}
  {%- if not event_time -%}
    {% do exceptions.raise_compiler_error("incremental_strategy 'microbatch' needs the event_time config (the column that holds each row's time)") %}
  {%- endif -%}
  {%- set conditions = [] -%}
  {%- if model.batch and model.batch.event_time_start -%}
    {%- do conditions.append(event_time ~ " >= timestamp'" ~ model.batch.event_time_start.isoformat() ~ "'") -%}
  {%- endif -%}
  {%- if model.batch and model.batch.event_time_end -%}
    {%- do conditions.append(event_time ~ " < timestamp'" ~ model.batch.event_time_end.isoformat() ~ "'") -%}
  {%- endif -%}
  {%- for predicate in (arg_dict['incremental_predicates'] or []) -%}
    {%- do conditions.append('(' ~ predicate ~ ')') -%}
  {%- endfor -%}
  {%- set dest_cols_csv = get_quoted_csv(arg_dict['dest_columns'] | map(attribute="name")) -%}
  insert into {{ arg_dict['target_relation'] }}
  replace where {{ conditions | join(' and ') if conditions else 'true' }}
  select {{ dest_cols_csv }} from {{ arg_dict['temp_relation'] }}
{%- endmacro %}
