-- Catalogue with the per-unit margin; a missing cost leaves the margin unknown.
select
    product_id,
    sku,
    product_name,
    lower(category)          as category,
    unit_price,
    unit_cost,
    unit_price - unit_cost   as unit_margin,
    launched_on,
    is_active
from {{ ref('products') }}
