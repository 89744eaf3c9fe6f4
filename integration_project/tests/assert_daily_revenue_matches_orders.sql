-- The daily mart must account for every cent of revenue orders, and its running total must
-- end at the grand total. Returns a row when either check fails.
with expected as (
    select sum(order_total) as revenue
    from {{ ref('int_order_totals') }}
    where is_revenue
),

actual as (
    select
        sum(revenue)             as revenue,
        max(cumulative_revenue)  as final_running_total
    from {{ ref('daily_revenue') }}
)

select
    expected.revenue            as expected_revenue,
    actual.revenue              as actual_revenue,
    actual.final_running_total  as final_running_total
from expected
cross join actual
where expected.revenue <> actual.revenue
   or actual.final_running_total <> expected.revenue
