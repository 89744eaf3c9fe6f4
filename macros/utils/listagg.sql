{#- listagg on Spark 4's own listagg aggregate, which (unlike dbt-spark's collect_list +
    array_join, written for Spark 3) honours the order: `order_by_clause` ("order by ...") goes
    into WITHIN GROUP (...). Spark has no LIMIT inside an aggregate, so with `limit_num` the
    values are joined with chr(0), split back into an array in that order, sliced and joined
    with the delimiter (a value that itself contains chr(0) would be split there). -#}

{% macro ducklake__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
  {%- set within_group = (' within group (' ~ order_by_clause ~ ')') if order_by_clause else '' -%}
  {%- if limit_num -%}
    array_join(slice(split(listagg({{ measure }}, chr(0)){{ within_group }}, chr(0)), 1, {{ limit_num }}), {{ delimiter_text }})
  {%- else -%}
    listagg({{ measure }}, {{ delimiter_text }}){{ within_group }}
  {%- endif -%}
{%- endmacro %}
