{#- Order history (SCD type 2): every change of an order's status or shipping cost becomes a
    new row, with dbt_valid_from/dbt_valid_to. Orders that disappear from the export are
    closed (hard_deletes: invalidate). Each `dbt snapshot` is one DuckLake snapshot. -#}
{% snapshot orders_snapshot %}
{{ config(
    schema='snapshots',
    unique_key='order_id',
    strategy='check',
    check_cols=['status', 'shipping_cost'],
    hard_deletes='invalidate',
) }}
select order_id, customer_id, ordered_at, status, shipping_cost from {{ ref('orders') }}
{% endsnapshot %}
