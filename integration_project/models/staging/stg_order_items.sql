-- Order lines with the discounted line total (two decimals, like an invoice).
select
    order_item_id,
    order_id,
    product_id,
    quantity,
    unit_price,
    coalesce(discount_rate, 0)                                           as discount_rate,
    cast(quantity * unit_price * (1 - coalesce(discount_rate, 0)) as decimal(12, 2)) as line_total
from {{ ref('order_items') }}
