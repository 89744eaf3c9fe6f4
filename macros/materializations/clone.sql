{#- `dbt clone`: a view per state relation, as dbt makes it for adapters without zero-copy
    table clones. DuckLake has none: a data file belongs to one table, and once a table is
    dropped and its snapshots expire, cleanup deletes its files, so a table sharing them would
    lose its rows. dbt-spark's clone (Delta's SHALLOW CLONE) does not apply.

    `clone_snapshot` (config, or the var `ducklake_clone_snapshot`): 'current' (default: the
    view reads the state relation as it is now), 'state' (as the run that wrote the state
    manifest left it) or a snapshot id; the pinned view reads `schema.table@v<id>`. -#}

{% macro ducklake__can_clone_table() %}
  {{ return(False) }}
{% endmacro %}

{% macro ducklake__create_or_replace_clone(this_relation, defer_relation) %}
  {% do exceptions.raise_compiler_error("DuckLake has no zero-copy table clone (a data file belongs to one table); `dbt clone` makes a view over " ~ defer_relation ~ " instead. Remove the call to create_or_replace_clone, or create a view or a table from a select") %}
{% endmacro %}

{%- materialization clone, adapter='ducklake' -%}
  {%- set relations = {'relations': []} -%}

  {%- if not defer_relation -%}
    {{ log("No relation found in state manifest for " ~ model.unique_id, info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation and not flags.FULL_REFRESH -%}
    {{ log("Relation " ~ existing_relation ~ " already exists", info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- if this.schema | lower == defer_relation.schema | lower and this.identifier | lower == defer_relation.identifier | lower -%}
    {#- a view over itself would replace the state's relation with a view of nothing -#}
    {%- if existing_relation is none -%}
      {% do exceptions.raise_compiler_error("dbt clone: the state's relation for " ~ model.unique_id ~ " is this target's own " ~ this.render() ~ ", which does not exist, so there is nothing to clone. Point --state at the artifacts of another target (e.g. production's)") %}
    {%- endif -%}
    {{ log("Target relation and defer relation are the same, skipping clone for relation: " ~ this.render(), info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- set setting = config.get('clone_snapshot') -%}
  {%- if setting is none -%}{%- set setting = var('ducklake_clone_snapshot', none) -%}{%- endif -%}
  {%- set pin = adapter.ducklake_clone_pin(setting) -%}

  {%- if pin is none -%}
    {#- dbt's own behaviour: the view materialization over `select * from <state relation>` -#}
    {{ return(context['materialization_view_ducklake']()) }}
  {%- endif -%}

  {{ log("clone of " ~ model.unique_id ~ " reads " ~ defer_relation ~ " at snapshot " ~ pin.snapshot_id ~ " (" ~ pin.reason ~ ")", info=True) }}
  {%- set state_relation = load_cached_relation(defer_relation) -%}
  {%- if state_relation is not none and state_relation.is_view -%}
    {% do exceptions.warn("dbt clone: " ~ defer_relation ~ " is a view: the clone reads its definition at snapshot " ~ pin.snapshot_id ~ ", over the relations it names as they are now (time travel pins a view's definition, not what it reads). Clone the tables it reads, or materialize it as a table, for rows exactly as of that snapshot") %}
  {%- endif -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and not existing_relation.is_view -%}
    {#- replaced in the snapshot that creates the view -#}
    {% do adapter.cache_dropped(existing_relation) %}
  {%- endif -%}

  {%- call statement('main') -%}
    {{ get_create_view_as_sql(target_relation, 'select * from ' ~ defer_relation.snapshot_name(pin.snapshot_id)) }}
  {%- endcall -%}

  {% do persist_docs(target_relation, model, for_columns=false) %}
  {{ run_hooks(post_hooks) }}
  {% do apply_grants(target_relation, grant_config, should_revoke=false) %}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization -%}
