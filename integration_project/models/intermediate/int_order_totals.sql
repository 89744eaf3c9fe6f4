-- Ephemeral: one row per order with its item totals (inlined as a CTE into the marts).
with lines as (
    select
        order_id,
        count(*)          as line_count,
        sum(quantity)     as units,
        sum(line_total)   as items_subtotal
    from {{ ref('stg_order_items') }}
    group by order_id
)

select
    o.order_id,
    o.customer_id,
    o.ordered_at,
    o.order_date,
    o.order_status,
    o.is_revenue,
    o.has_coupon,
    coalesce(l.line_count, 0)                                        as line_count,
    coalesce(l.units, 0)                                             as units,
    coalesce(l.items_subtotal, cast(0 as decimal(12, 2)))            as items_subtotal,
    o.shipping_cost,
    coalesce(l.items_subtotal, cast(0 as decimal(12, 2))) + o.shipping_cost as order_total
from {{ ref('stg_orders') }} as o
left join lines as l
    on o.order_id = l.order_id
