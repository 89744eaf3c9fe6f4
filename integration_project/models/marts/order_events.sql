-- One row per order, loaded in monthly batches (dbt's microbatch strategy). Each batch
-- replaces its month with INSERT INTO ... REPLACE WHERE: one DuckLake snapshot per batch, so a
-- batch that fails or is retried never leaves a month half loaded. dbt filters stg_orders to
-- the batch's window by its event_time.
{{ config(
    materialized='incremental',
    incremental_strategy='microbatch',
    event_time='ordered_at',
    batch_size='month',
    begin='2025-03-01',
    lookback=1,
) }}

select
    order_id,
    customer_id,
    ordered_at,
    order_status,
    shipping_cost
from {{ ref('stg_orders') }}
