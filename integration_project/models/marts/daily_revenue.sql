-- Revenue per calendar day with running totals and a trailing 7-day average.
with days as (
    select
        order_date,
        count(*)                               as orders,
        sum(units)                             as units,
        sum(items_subtotal)                    as items_revenue,
        sum(shipping_cost)                     as shipping_revenue,
        sum(order_total)                       as revenue,
        sum(case when has_coupon then 1 else 0 end) as coupon_orders
    from {{ ref('int_order_totals') }}
    where is_revenue
    group by order_date
)

select
    order_date,
    orders,
    units,
    items_revenue,
    shipping_revenue,
    revenue,
    coupon_orders,
    sum(revenue) over (order by order_date
                       rows between unbounded preceding and current row)      as cumulative_revenue,
    cast(avg(revenue) over (order by order_date
                            rows between 6 preceding and current row)
         as decimal(12, 2))                                                   as revenue_7d_avg,
    revenue - lag(revenue) over (order by order_date)                         as revenue_change,
    row_number() over (order by order_date)                                   as day_number
from days
