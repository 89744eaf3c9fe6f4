-- Time travel: how daily revenue changed since an earlier state of the lake.
--   dbt show --select revenue_since_snapshot --vars '{compare_version: 42}'
--   dbt show --select revenue_since_snapshot --vars '{compare_time: "2026-11-26 08:00:00+00"}'
-- ducklake_snapshots() lists the snapshots (id, time, author, commit message).
{%- set version = var('compare_version', none) -%}
{%- set timestamp = var('compare_time', none) -%}
{%- if version is none and timestamp is none -%}{%- set version = 1 -%}{%- endif %}
with now as (
    select order_date, revenue from {{ ref('daily_revenue') }}
),
before as (
    select order_date, revenue
    from {{ ducklake_at(ref('daily_revenue'), version=version, timestamp=timestamp) }}
)
select
    coalesce(now.order_date, before.order_date)             as order_date,
    before.revenue                                          as revenue_before,
    now.revenue                                             as revenue_now,
    coalesce(now.revenue, 0) - coalesce(before.revenue, 0)  as change
from now full outer join before on now.order_date = before.order_date
where not (now.revenue <=> before.revenue)
order by order_date
