{{ config(materialized='incremental', incremental_strategy='merge', unique_key='event_id',
          on_schema_change='append_new_columns') }}
-- Site events where the user who initiated the action is not the user it was done as
-- (an administrator acting as someone else, or a service acting for a user). One row per event:
-- incremental, each run reads the silver rows promoted since the newest it holds.
with impersonations as (
    select
        event_id,
        event_type,
        event_time,
        site_luid,
        initiating_user_luid,
        actor_user_luid,
        site_role as actor_site_role,
        'medium' as severity,
        array(event_id) as evidence_event_ids,
        silver_ingest_ts
    from {{ ref('stg_site__events') }}
    where
        initiating_user_luid is not null
        and actor_user_luid is not null
        and initiating_user_luid != actor_user_luid
)

select * from impersonations
{{ newer_than_mart(incremental=is_incremental_with(['silver_ingest_ts'])) }}
