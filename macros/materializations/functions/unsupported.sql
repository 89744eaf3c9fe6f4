{#- Kinds of dbt function the lake cannot store: refused before anything runs, naming what is
    accepted. A DuckLake macro is SQL both engines read; a Python or JavaScript body, an
    aggregate or a table function has no such form. -#}
{% macro ducklake__unsupported_function(kind) %}
    {% do exceptions.raise_compiler_error(
        "function " ~ model.name ~ " is " ~ kind ~ ", which dbt-ducklake cannot store in the "
        ~ "lake: it stores scalar SQL functions (functions/*.sql with config type: scalar, "
        ~ "the default), created with Spark's CREATE FUNCTION ... RETURN and run by DuckDB "
        ~ "as macros. Write the function in SQL, or use a Python model instead") %}
{% endmacro %}

{% macro ducklake__scalar_function_python(target_relation) %}
    {{ ducklake__unsupported_function('a Python function') }}
{% endmacro %}

{% macro ducklake__scalar_function_javascript(target_relation) %}
    {{ ducklake__unsupported_function('a JavaScript function') }}
{% endmacro %}

{% macro ducklake__aggregate_function_sql(target_relation) %}
    {{ ducklake__unsupported_function('an aggregate function (type: aggregate)') }}
{% endmacro %}

{% macro ducklake__aggregate_function_python(target_relation) %}
    {{ ducklake__unsupported_function('a Python aggregate function (type: aggregate)') }}
{% endmacro %}

{% macro ducklake__table_function_sql(target_relation) %}
    {{ ducklake__unsupported_function('a table function (type: table)') }}
{% endmacro %}
