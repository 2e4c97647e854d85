-- Users whose current site role takes a licence and who have not signed in to the site for
-- inactive_user_days (conf/ gold:). "Now" is the newest event in the lakehouse, so the report
-- answers the same way whenever it is rebuilt on the same data.
with as_of as (
    select max(event_time) as as_of_time from {{ ref('stg_site__events') }}
),

current_users as (
    select * from {{ ref('dim_users') }}
    where is_current and site_role is not null and site_role not in ('Unlicensed', 'Guest')
),

last_sign_in as (
    select
        site_luid,
        user_luid,
        max(event_time) as last_sign_in_at,
        max_by(event_id, struct(event_time, event_id)) as last_sign_in_event_id
    from {{ ref('fct_logins') }}
    where family = 'site' and outcome = 'success'
    group by site_luid, user_luid
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
