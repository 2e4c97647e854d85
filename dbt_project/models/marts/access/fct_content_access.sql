{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id',
          on_schema_change='append_new_columns') }}

with access_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['initiating_user_luid', 'string'],
        ['content_type', 'string'], ['content_luid', 'string'], ['content_name', 'string'],
        ['workbook_luid', 'string'], ['project_luid', 'string'], ['view_luid', 'string'], ['view_name', 'string'],
        ['ip_address', 'string'], ['user_agent', 'string'], ['session_id', 'string'],
        ['silver_ingest_ts', 'timestamp']
    ]) }}
)

-- vizql_http_request (live feed): one row per request a browser makes to a view, the only site
-- event with the client's IP address, user agent and session id.

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
        when event_type = 'vizql_http_request' then 'view_request'
        else 'view'
    end as access_kind,
    case when event_type = 'vizql_http_request' then 'view' else content_type end as content_type,
    case when event_type = 'vizql_http_request' then view_luid else content_luid end as content_luid,
    case when event_type = 'vizql_http_request' then view_name else content_name end as content_name,
    workbook_luid,
    project_luid,
    ip_address,
    user_agent,
    session_id,
    silver_ingest_ts
from access_events
{{ newer_than_mart() }}
