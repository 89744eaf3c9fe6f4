{{ config(materialized='view') }}
-- A live view: how many orders sit in each status, and what they are worth.
select
    order_status,
    count(*)                    as order_count,
    sum(order_total)            as total_value,
    min(order_date)             as first_order_date,
    max(order_date)             as last_order_date
from {{ ref('int_order_totals') }}
group by order_status
