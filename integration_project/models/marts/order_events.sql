-- One row per order, loaded in yearly batches (dbt's microbatch strategy). Each batch
-- replaces its year with INSERT INTO ... REPLACE WHERE: one DuckLake snapshot per batch, so a
-- batch that fails or is retried never leaves a year half loaded. dbt filters stg_orders to
-- the batch's window by its event_time. Batches run from `begin` to today: yearly batches keep
-- a full build of this project at a few batches (monthly ones would add a batch every month).
{{ config(
    materialized='incremental',
    incremental_strategy='microbatch',
    event_time='ordered_at',
    batch_size='year',
    begin='2025-01-01',
    lookback=1,
) }}

select
    order_id,
    customer_id,
    ordered_at,
    order_status,
    shipping_cost
from {{ ref('stg_orders') }}
