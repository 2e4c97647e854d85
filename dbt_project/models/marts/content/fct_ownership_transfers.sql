{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

-- content_owner_change and the hist_change_*_ownership events in one shape. Tableau writes both
-- for workbooks, data sources, flows and projects: source_event_type tells them apart.
with transfers as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['content_type', 'string'],
        ['content_luid', 'string'], ['content_name', 'string'], ['old_owner_luid', 'string'],
        ['old_owner_name', 'string'], ['new_owner_luid', 'string'], ['new_owner_name', 'string'],
        ['silver_ingest_ts', 'timestamp']
    ]) }}
)

select
    event_id,
    event_type as source_event_type,
    event_time,
    site_luid,
    actor_user_luid,
    lower(content_type) as content_type,
    content_luid,
    content_name,
    old_owner_luid,
    old_owner_name,
    new_owner_luid,
    new_owner_name,
    silver_ingest_ts
from transfers
{{ newer_than_mart() }}
