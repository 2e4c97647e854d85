{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id',
          on_schema_change='append_new_columns') }}

with membership_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['group_luid', 'string'],
        ['name', 'string'], ['user_luid', 'string'], ['user_name', 'string'],
        ['group_operation', 'string'], ['group_set_luid', 'string'], ['group_set_operation', 'string'],
        ['is_error', 'boolean'], ['silver_ingest_ts', 'timestamp']
    ]) }}
),

-- A group joins or leaves a group set as a user joins or leaves a group: one row per change, what
-- changed named by membership_of, so that "who could reach what, through which grouping" is one table.
shaped as (
    select
        event_id,
        event_type,
        event_time,
        site_luid,
        actor_user_luid,
        case when event_type = 'add_delete_group_to_group_set' then 'group_set' else 'group' end as membership_of,
        group_set_luid,
        group_luid,
        name as group_name,
        user_luid,
        user_name,
        coalesce(group_operation, group_set_operation) as operation,
        is_error,
        silver_ingest_ts
    from membership_events
)

select
    event_id,
    event_type,
    event_time,
    site_luid,
    actor_user_luid,
    membership_of,
    group_set_luid,
    group_luid,
    group_name,
    user_luid,
    user_name,
    case
        when event_type = 'hist_add_user_to_group' then 'added'
        when event_type = 'hist_delete_user_from_group' then 'removed'
        when lower(operation) = 'add' then 'added'
        when lower(operation) in ('delete', 'remove') then 'removed'
        else 'other'
    end as change,
    is_error,
    silver_ingest_ts
from shaped
{{ newer_than_mart() }}
