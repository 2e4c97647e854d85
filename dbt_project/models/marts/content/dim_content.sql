-- Every piece of content the events mention, with its latest name, type and owner.
with mentions as (
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        cast(null as string) as owner_luid,
        action
    from {{ ref('fct_content_lifecycle') }}
    union all
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        new_owner_luid as owner_luid,
        'ownership_transfer' as action
    from {{ ref('fct_ownership_transfers') }}
    union all
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        cast(null as string) as owner_luid,
        access_kind as action
    from {{ ref('fct_content_access') }}
    union all
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        cast(null as string) as owner_luid,
        'permission_change' as action
    from {{ ref('fct_permission_changes') }}
),

known as (
    select * from mentions
    where content_luid is not null
)

select
    content_luid,
    max(site_luid) as site_luid,
    max_by(content_type, case when content_type is not null then struct(event_time, event_id) end) as content_type,
    max_by(content_name, case when content_name is not null then struct(event_time, event_id) end) as content_name,
    max_by(owner_luid, case when owner_luid is not null then struct(event_time, event_id) end) as current_owner_luid,
    min(event_time) as first_seen_at,
    max(event_time) as last_seen_at,
    max(case when action = 'publish' then event_time end) as last_published_at,
    max(case when action = 'delete' then event_time end) as deleted_at
from known
group by content_luid
