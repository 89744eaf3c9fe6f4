-- A change-driven model: every change to daily_product_sales since this model last ran, read
-- from DuckLake's change feed. The watermark (the snapshot read up to) is committed with this
-- model's own rows, so each change lands here exactly once, even across failed runs.
{{ config(materialized='incremental', incremental_strategy='append') }}

select
    c.snapshot_id,
    c.change_type,
    c.order_date,
    c.product_id,
    c.units,
    c.revenue
from {{ ducklake_changes_since_last_run(ref('daily_product_sales')) }} as c
where c.change_type in ('insert', 'update_postimage', 'delete')
