-- Workbooks and data sources nobody has opened for stale_content_days: no view of the workbook's
-- views, no download, export or view request since, or never, for content first seen at least
-- that long ago. Deleted content is left out. "Now" is the newest event in the lakehouse.
with as_of as (
    {{ lake_now() }}
)

select
    {{ detection_id('stale_content', ['c.content_luid', 'cast(c.last_accessed_at as string)']) }} as detection_id,
    'low' as severity,
    c.site_luid,
    c.content_luid,
    c.content_type,
    c.content_name,
    c.current_owner_luid,
    c.first_seen_at,
    c.last_accessed_at,
    coalesce(c.last_accessed_at, c.first_seen_at) + make_interval(0, 0, 0, {{ var('stale_content_days') }})
        as stale_since,
    filter(array(c.last_access_event_id), e -> e is not null) as evidence_event_ids
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
