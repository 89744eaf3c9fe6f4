-- Order headers; the calendar day of an order is taken in UTC. event_time lets microbatch
-- models downstream read one batch's window of orders.
{{ config(event_time='ordered_at') }}
select
    order_id,
    customer_id,
    ordered_at,
    cast(ordered_at as date)                as order_date,
    lower(status)                           as order_status,
    lower(status) in ('placed', 'shipped', 'completed') as is_revenue,
    shipping_cost,
    nullif(trim(coupon_code), '')           as coupon_code,
    coupon_code is not null                 as has_coupon,
    delivery_note
from {{ ref('orders') }}
