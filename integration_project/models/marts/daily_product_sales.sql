-- Units and revenue per day and product, kept incrementally with MERGE on a composite key.
-- Orders change status for a few days after they are placed (placed -> shipped, or
-- cancelled), so every run re-merges the last `sales_lookback_days` days and adds new ones;
-- matched_condition updates only the rows whose figures changed.
-- Each run is one DuckLake snapshot; DuckDB's table_changes shows the re-merged rows as
-- update_preimage/update_postimage pairs.
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key=['order_date', 'product_id'],
    on_schema_change='append_new_columns',
    matched_condition='not (DBT_INTERNAL_SOURCE.orders <=> DBT_INTERNAL_DEST.orders
                            and DBT_INTERNAL_SOURCE.units <=> DBT_INTERNAL_DEST.units
                            and DBT_INTERNAL_SOURCE.revenue <=> DBT_INTERNAL_DEST.revenue
                            and DBT_INTERNAL_SOURCE.lost_revenue <=> DBT_INTERNAL_DEST.lost_revenue)',
) }}

select
    o.order_date,
    i.product_id,
    count(distinct o.order_id)                                          as orders,
    sum(i.quantity)                                                     as units,
    cast(sum(case when o.is_revenue then i.line_total else 0 end) as decimal(14, 2)) as revenue,
    cast(sum(case when o.is_revenue then 0 else i.line_total end) as decimal(14, 2)) as lost_revenue
from {{ ref('stg_order_items') }} i
join {{ ref('stg_orders') }} o on o.order_id = i.order_id
{% if is_incremental() %}
where o.order_date >= (
    select date_sub(max(order_date), {{ var('sales_lookback_days', 3) }}) from {{ this }}
)
{% endif %}
group by o.order_date, i.product_id
