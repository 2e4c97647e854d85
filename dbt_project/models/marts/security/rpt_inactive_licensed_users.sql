-- Users whose current site role takes a licence and who have not signed in to the site for
-- inactive_user_days (conf/ gold:). "Now" is the newest event in the lakehouse, so the report
-- answers the same way whenever it is rebuilt on the same data.
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
)

select
    u.user_version_key,
    u.site_luid,
    u.user_luid,
    u.user_name,
    u.site_role,
    l.last_sign_in_at,
    l.last_sign_in_event_id,
    a.as_of_time,
    cast(datediff(a.as_of_time, l.last_sign_in_at) as int) as days_since_sign_in
from current_users as u
cross join as_of as a
left join last_sign_in as l on u.site_luid = l.site_luid and u.user_luid = l.user_luid
where
    l.last_sign_in_at is null
    or l.last_sign_in_at < a.as_of_time - make_interval(0, 0, 0, {{ var('inactive_user_days') }})
