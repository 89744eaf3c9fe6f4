-- Customer lifetime value over revenue orders (placed, shipped, completed).
with revenue_orders as (
    select * from {{ ref('int_order_totals') }}
    where is_revenue
),

per_customer as (
    select
        customer_id,
        count(*)              as order_count,
        sum(units)            as units_bought,
        sum(order_total)      as lifetime_value,
        min(order_date)       as first_order_date,
        max(order_date)       as last_order_date
    from revenue_orders
    group by customer_id
),

joined as (
    select
        c.customer_id,
        c.full_name,
        c.email,
        c.country_code,
        c.signup_date,
        p.first_order_date,
        p.last_order_date,
        coalesce(p.order_count, 0)                            as order_count,
        coalesce(p.units_bought, 0)                           as units_bought,
        coalesce(p.lifetime_value, cast(0 as decimal(20, 2))) as lifetime_value
    from {{ ref('stg_customers') }} as c
    left join per_customer as p
        on c.customer_id = p.customer_id
)

select
    customer_id,
    full_name,
    email,
    country_code,
    signup_date,
    first_order_date,
    last_order_date,
    order_count,
    units_bought,
    lifetime_value,
    case when order_count > 0
         then cast(lifetime_value / order_count as decimal(12, 2)) end        as avg_order_value,
    dense_rank() over (order by lifetime_value desc)                          as value_rank,
    rank() over (partition by country_code order by lifetime_value desc,
                 customer_id)                                                 as country_rank,
    round(lifetime_value / nullif(sum(lifetime_value) over (), 0), 4)         as share_of_revenue
from joined
