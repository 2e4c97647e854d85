-- Licences larger than their use. Downgrade candidates: Creators and Explorers whose current role
-- began at least licence_idle_days ago and who have not authored (published, created, renamed,
-- moved or deleted content, or opened a view in web authoring) for that long: a Creator could be
-- an Explorer, an Explorer a Viewer. Removal candidates: licensed users with no sign-in for
-- inactive_user_days (rpt_inactive_licensed_users). "Now" is the newest event in the lakehouse.
with as_of as (
    {{ lake_now() }}
),

authoring as (
    select
        site_luid,
        user_luid,
        last_authored_at,
        last_authoring_event_id
    from {{ ref('int_user_activity') }}
    where last_authored_at is not null
),

downgrades as (
    select
        u.site_luid,
        u.user_luid,
        u.user_name,
        u.user_email,
        u.site_role,
        case when u.site_role = 'Creator' then 'Explorer' else 'Viewer' end as suggested_role,
        'no_authoring' as reason,
        a.last_authored_at as last_activity_at,
        a.last_authoring_event_id as last_activity_event_id,
        greatest(u.valid_from, coalesce(a.last_authored_at, u.valid_from))
        + make_interval(0, 0, 0, {{ var('licence_idle_days') }}) as idle_since
    from {{ ref('dim_users') }} as u
    cross join as_of as x
    left join authoring as a on u.site_luid = a.site_luid and u.user_luid = a.user_luid
    where
        u.is_current
        and u.site_role in ('Creator', 'Explorer', 'ExplorerCanPublish')
        and u.valid_from <= x.as_of_time - make_interval(0, 0, 0, {{ var('licence_idle_days') }})
        and (
            a.last_authored_at is null
            or a.last_authored_at < x.as_of_time - make_interval(0, 0, 0, {{ var('licence_idle_days') }})
        )
),

removals as (
    select
        site_luid,
        user_luid,
        user_name,
        cast(null as string) as user_email,
        site_role,
        'Unlicensed' as suggested_role,
        'no_sign_in' as reason,
        last_sign_in_at as last_activity_at,
        last_sign_in_event_id as last_activity_event_id,
        coalesce(last_sign_in_at, as_of_time) + make_interval(0, 0, 0, {{ var('inactive_user_days') }}) as idle_since
    from {{ ref('rpt_inactive_licensed_users') }}
),

candidates as (
    {{ union_by_name(['downgrades', 'removals'], [
        'site_luid', 'user_luid', 'user_name', 'user_email', 'site_role', 'suggested_role', 'reason',
        'last_activity_at', 'last_activity_event_id', 'idle_since'
    ]) }}
)

select
    {{ detection_id('licence', [
        'site_luid', 'user_luid', 'reason', 'site_role', 'cast(last_activity_at as string)'
    ]) }}
        as detection_id,
    'low' as severity,
    site_luid,
    user_luid,
    user_name,
    user_email,
    site_role,
    suggested_role,
    reason,
    last_activity_at,
    idle_since,
    filter(array(last_activity_event_id), e -> e is not null) as evidence_event_ids
from candidates
