with group_events as (
    {{ group_events('groups', 'site', [
        ['event_type', 'string'], ['event_time', 'timestamp'], ['event_id', 'string'], ['site_luid', 'string'],
        ['group_luid', 'string'], ['group_name', 'string'], ['name', 'string'], ['group_domain', 'string'],
        ['group_operation', 'string']
    ]) }}
),

membership as (
    select
        event_type,
        event_time,
        event_id,
        site_luid,
        group_luid,
        cast(null as string) as group_name,
        group_name as name,
        cast(null as string) as group_domain,
        cast(null as string) as group_operation
    from {{ ref('fct_group_membership_changes') }}
),

seen as (
    select
        *,
        coalesce(group_name, name) as known_name,
        event_type in ('hist_delete_group')
        or (event_type = 'create_delete_group' and lower(group_operation) = 'delete') as is_delete
    from (
        select * from group_events
        union all
        select * from membership
    ) as unioned
    where group_luid is not null
)

select
    group_luid,
    max(site_luid) as site_luid,
    max_by(known_name, case when known_name is not null then struct(event_time, event_id) end) as group_name,
    max(group_domain) as group_domain,
    min(event_time) as first_seen_at,
    max(event_time) as last_seen_at,
    max(case when is_delete then event_time end) as deleted_at
from seen
group by group_luid
