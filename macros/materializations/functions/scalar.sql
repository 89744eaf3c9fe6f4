{#- A dbt SQL function (``functions/``) is a Spark SQL function stored in the lake (a DuckLake
    macro, with DuckDB's body where it translates): every later dbt run, Spark session and
    DuckDB finds it. dbt calls it as {{ function('f') }}, rendered `schema.f`. -#}
{% macro ducklake__scalar_function_sql(target_relation) %}
    CREATE OR REPLACE FUNCTION {{ target_relation.render() }}({{ formatted_scalar_function_args_sql() }})
    RETURNS {{ model.returns.data_type }}
    {{ scalar_function_volatility_sql() }}
    RETURN {{ model.compiled_code }}
{% endmacro %}

{#- Arguments with their defaults: Spark SQL functions take `x FLOAT DEFAULT 100`. -#}
{% macro ducklake__formatted_scalar_function_args_sql() %}
    {%- set args = [] -%}
    {%- for arg in model.arguments -%}
        {%- set default = arg.get('default_value') if arg is mapping else arg.default_value -%}
        {%- do args.append(arg.name ~ ' ' ~ arg.data_type
                           ~ ('' if default is none else ' DEFAULT ' ~ default)) -%}
    {%- endfor -%}
    {{ args | join(', ') }}
{% endmacro %}

{#- Spark knows DETERMINISTIC and NOT DETERMINISTIC; it has no `stable`. -#}
{% macro ducklake__scalar_function_volatility_sql() %}
    {%- set volatility = model.config.get('volatility') -%}
    {%- if volatility == 'deterministic' -%}
        DETERMINISTIC
    {%- elif volatility == 'non-deterministic' -%}
        NOT DETERMINISTIC
    {%- elif volatility is not none -%}
        {%- do unsupported_volatility_warning(volatility) -%}
    {%- endif -%}
{% endmacro %}
