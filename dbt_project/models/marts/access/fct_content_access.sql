{{ config(materialized='incremental', incremental_strategy='merge', unique_key='event_id') }}

with access_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['initiating_user_luid', 'string'],
        ['content_type', 'string'], ['content_luid', 'string'], ['content_name', 'string'],
        ['workbook_luid', 'string'], ['project_luid', 'string'], ['silver_ingest_ts', 'timestamp']
    ]) }}
)

select
    event_id,
    event_type,
    event_time,
    site_luid,
    actor_user_luid,
    initiating_user_luid,
    case
        when event_type like 'hist_download_%' then 'download'
        when event_type like 'hist_export_%' then 'export'
        else 'view'
    end as access_kind,
    content_type,
    content_luid,
    content_name,
    workbook_luid,
    project_luid,
    silver_ingest_ts
from access_events
{{ newer_than_mart() }}
