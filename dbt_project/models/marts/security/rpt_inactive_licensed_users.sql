-- Users whose current site role takes a licence and who have not signed in to the site for
-- inactive_user_days (conf/ gold:). "Now" is the newest event in the lakehouse, so the report
-- answers the same way whenever it is rebuilt on the same data. A licensed user the entity
-- histories (auditlake inventory, Tableau's entity snapshots) hold now and no event ever named has
-- never signed in since the lake began, which the log alone cannot show: added, has_no_event.
with as_of as (
    {{ lake_now() }}
),

current_users as (
    select * from {{ ref('dim_users') }}
    where is_current and site_role is not null and site_role not in ('Unlicensed', 'Guest')
),

last_sign_in as (
    select
        site_luid,
        user_luid,
        last_sign_in_at,
        last_sign_in_event_id
    from {{ ref('int_user_activity') }}
    where last_sign_in_at is not null
),

from_events as (
    select
        u.user_version_key,
        u.site_luid,
        u.user_luid,
        u.user_name,
        u.site_role,
        l.last_sign_in_at,
        l.last_sign_in_event_id,
        false as has_no_event
    from current_users as u
    left join last_sign_in as l on u.site_luid = l.site_luid and u.user_luid = l.user_luid
),

-- every user dim_users knows, whatever the role: a user with events is judged on them above
known as (
    select distinct
        lower(site_luid) as site_luid,
        lower(user_luid) as user_luid
    from {{ ref('dim_users') }}
),

never_in_events as (
    select
        {{ user_version_key('s.site_luid', 's.user_luid', "'state'") }} as user_version_key,
        s.site_luid,
        s.user_luid,
        s.user_name,
        s.site_role,
        cast(null as timestamp) as last_sign_in_at,
        cast(null as string) as last_sign_in_event_id,
        true as has_no_event
    from (
        select
            lower(site_luid) as site_luid,
            lower(luid) as user_luid,
            name as user_name,
            site_role
        from ({{ snapshot_history('users', [['luid', 'string'], ['name', 'string'], ['site_role', 'string']]) }}) as h
        where valid_to is null and luid is not null and site_role not in ('Unlicensed', 'Guest')
    ) as s
    left anti join known as k on s.site_luid = k.site_luid and s.user_luid = k.user_luid
),

candidates as (
    select * from from_events
    union all
    select * from never_in_events
)

select
    c.user_version_key,
    c.site_luid,
    c.user_luid,
    c.user_name,
    c.site_role,
    c.last_sign_in_at,
    c.last_sign_in_event_id,
    a.as_of_time,
    cast(datediff(a.as_of_time, c.last_sign_in_at) as int) as days_since_sign_in,
    c.has_no_event
from candidates as c
cross join as_of as a
where
    c.last_sign_in_at is null
    or c.last_sign_in_at < a.as_of_time - make_interval(0, 0, 0, {{ var('inactive_user_days') }})
