-- Sales per product (unsold products included), ranked within their category.
with sold as (
    select
        i.product_id,
        count(distinct i.order_id)  as order_count,
        sum(i.quantity)             as units_sold,
        sum(i.line_total)           as revenue
    from {{ ref('stg_order_items') }} as i
    inner join {{ ref('int_order_totals') }} as o
        on i.order_id = o.order_id
    where o.is_revenue
    group by i.product_id
),

products as (
    select
        p.product_id,
        p.sku,
        p.product_name,
        p.category,
        p.unit_price,
        p.is_active,
        coalesce(s.order_count, 0)                            as order_count,
        coalesce(s.units_sold, 0)                             as units_sold,
        coalesce(s.revenue, cast(0 as decimal(22, 2)))        as revenue,
        p.unit_margin * coalesce(s.units_sold, 0)             as gross_margin
    from {{ ref('stg_products') }} as p
    left join sold as s
        on p.product_id = s.product_id
)

select
    product_id,
    sku,
    product_name,
    category,
    unit_price,
    is_active,
    order_count,
    units_sold,
    revenue,
    gross_margin,
    rank() over (partition by category order by revenue desc, product_id)    as category_rank,
    round(revenue / nullif(sum(revenue) over (partition by category), 0), 4) as share_of_category,
    ntile(4) over (order by revenue desc, product_id)                        as revenue_quartile
from products
