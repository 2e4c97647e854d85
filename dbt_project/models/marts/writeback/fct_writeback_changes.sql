{{ config(materialized='incremental', incremental_strategy='merge', unique_key='action_id') }}

-- One row per write-back action. Silver merges late copies of an action (seen in the second
-- database) into the same row and re-stamps it, so such rows come through again and merge.
select
    action_id,
    action_date_utc,
    action_date_local,
    utc_offset_minutes,
    action_date,
    action_name,
    edit_kind,
    username,
    dataset,
    dataset_key,
    dataset_operations,
    replaced_line_key,
    new_line_key,
    widget_config_id,
    writeback_site,
    client_system,
    seen_in_metadata,
    seen_in_persistence,
    copies_differ,
    silver_ingest_ts
from {{ ref('stg_writeback__historical_audit') }}
{{ newer_than_mart() }}
