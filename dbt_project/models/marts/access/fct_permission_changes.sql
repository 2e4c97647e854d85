{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

-- Every permission event in one shape. set_permissions replaced create_permissions and
-- update_permissions in October 2024: the older two are kept, flagged is_deprecated_event.
with permission_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['initiating_user_luid', 'string'],
        ['content_type', 'string'], ['content_id', 'bigint'], ['content_luid', 'string'],
        ['content_name', 'string'], ['grantee_type', 'string'], ['grantee_id', 'bigint'],
        ['grantee_luid', 'string'], ['capability_id', 'bigint'], ['capability_value', 'string'],
        ['grantee_value', 'string'], ['permission_type', 'string'], ['template_type', 'string'],
        ['is_error', 'boolean'], ['is_deprecated_event', 'boolean'], ['silver_ingest_ts', 'timestamp']
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
        when event_type in ('set_permissions', 'create_permissions', 'update_permissions') then 'set'
        when event_type = 'delete_permissions' then 'delete'
        when event_type = 'delete_all_permissions' then 'delete_all'
        when event_type = 'delete_permissions_grantee' then 'delete_grantee'
        when event_type = 'update_permissions_template' then 'template'
    end as change_kind,
    content_type,
    content_id,
    content_luid,
    content_name,
    lower(grantee_type) as grantee_type,
    grantee_id,
    grantee_luid,
    capability_id,
    capability_value as capability,
    -- the log states the rule in force after a set and the rule removed by a delete
    case when event_type = 'delete_permissions' then grantee_value end as old_value,
    case when event_type != 'delete_permissions' then grantee_value end as new_value,
    permission_type,
    template_type,
    is_error,
    is_deprecated_event,
    silver_ingest_ts
from permission_events
{{ newer_than_mart() }}
