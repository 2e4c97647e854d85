{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

with membership_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['group_luid', 'string'],
        ['name', 'string'], ['user_luid', 'string'], ['user_name', 'string'],
        ['group_operation', 'string'], ['silver_ingest_ts', 'timestamp']
    ]) }}
)

select
    event_id,
    event_type,
    event_time,
    site_luid,
    actor_user_luid,
    group_luid,
    name as group_name,
    user_luid,
    user_name,
    case
        when event_type = 'hist_add_user_to_group' then 'added'
        when event_type = 'hist_delete_user_from_group' then 'removed'
        when lower(group_operation) = 'add' then 'added'
        when lower(group_operation) in ('delete', 'remove') then 'removed'
        else 'other'
    end as change,
    silver_ingest_ts
from membership_events
{{ newer_than_mart() }}
