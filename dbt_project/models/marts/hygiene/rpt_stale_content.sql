-- Workbooks and data sources nobody has opened for stale_content_days: no view of the workbook's
-- views, no download, export or view request since, or never, for content first seen at least
-- that long ago. Deleted content is left out. "Now" is the newest event in the lakehouse.
-- Content that the entity histories (auditlake inventory, Tableau's entity snapshots) hold now and
-- no event ever named is the stalest of all, which the log alone cannot see: it is added, with
-- has_no_event, when created at least that long ago (or at an unknown time).
with as_of as (
    {{ lake_now() }}
),

from_events as (
    select
        c.site_luid,
        c.content_luid,
        c.content_type,
        c.content_name,
        c.current_owner_luid,
        c.first_seen_at,
        c.last_accessed_at,
        c.last_access_event_id,
        false as has_no_event
    from {{ ref('int_content_mentions') }} as c
    cross join as_of as x
    where
        c.is_mentioned
        and lower(c.content_type) in ('workbook', 'datasource')
        and c.deleted_at is null
        and c.first_seen_at <= x.as_of_time - make_interval(0, 0, 0, {{ var('stale_content_days') }})
        and (
            c.last_accessed_at is null
            or c.last_accessed_at < x.as_of_time - make_interval(0, 0, 0, {{ var('stale_content_days') }})
        )
),

current_state as (
    select
        lower(site_luid) as site_luid,
        lower(luid) as content_luid,
        'workbook' as content_type,
        name as content_name,
        lower(owner_luid) as current_owner_luid,
        created_at
    from ({{ snapshot_history('workbooks', [
        ['luid', 'string'], ['name', 'string'], ['owner_luid', 'string'], ['created_at', 'timestamp']
    ]) }}) as w
    where valid_to is null and luid is not null

    union all

    select
        lower(site_luid) as site_luid,
        lower(luid) as content_luid,
        'datasource' as content_type,
        name as content_name,
        lower(owner_luid) as current_owner_luid,
        created_at
    from ({{ snapshot_history('datasources', [
        ['luid', 'string'], ['name', 'string'], ['owner_luid', 'string'], ['created_at', 'timestamp']
    ]) }}) as d
    where valid_to is null and luid is not null
),

never_in_events as (
    select
        s.site_luid,
        s.content_luid,
        s.content_type,
        s.content_name,
        s.current_owner_luid,
        s.created_at as first_seen_at,
        cast(null as timestamp) as last_accessed_at,
        cast(null as string) as last_access_event_id,
        true as has_no_event
    from current_state as s
    cross join as_of as x
    left anti join {{ ref('int_content_mentions') }} as c on s.content_luid = lower(c.content_luid)
    where
        s.created_at is null
        or s.created_at <= x.as_of_time - make_interval(0, 0, 0, {{ var('stale_content_days') }})
),

stale as (
    select * from from_events
    union all
    select * from never_in_events
)

select
    {{ detection_id('stale_content', ['s.content_luid', 'cast(s.last_accessed_at as string)']) }} as detection_id,
    'low' as severity,
    s.site_luid,
    s.content_luid,
    s.content_type,
    s.content_name,
    s.current_owner_luid,
    s.first_seen_at,
    s.last_accessed_at,
    coalesce(s.last_accessed_at, s.first_seen_at) + make_interval(0, 0, 0, {{ var('stale_content_days') }})
        as stale_since,
    filter(array(s.last_access_event_id), e -> e is not null) as evidence_event_ids,
    s.has_no_event
from stale as s
