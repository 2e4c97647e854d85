-- Site-role history (type 2): every current-edition site event states its actor's site role and
-- system-admin level at that moment. A version starts where a user's role or admin level
-- differs from the previous observation and ends where the next version starts.
with observations as (
    select
        site_luid,
        actor_user_luid as user_luid,
        site_role_id,
        site_role,
        coalesce(system_admin_level = 10, false) as is_system_admin,
        event_time,
        event_id
    from {{ ref('stg_site__events') }}
    where actor_user_luid is not null and site_role_id is not null
),

flagged as (
    select
        *,
        case
            when
                lag(site_role_id) over (partition by site_luid, user_luid order by event_time, event_id) = site_role_id
                and lag(is_system_admin) over (partition by site_luid, user_luid order by event_time, event_id)
                = is_system_admin
                then 0
            else 1
        end as starts_version
    from observations
),

versions as (
    select
        *,
        sum(starts_version) over (
            partition by site_luid, user_luid order by event_time, event_id
            rows between unbounded preceding and current row
        ) as version_number
    from flagged
),

collapsed as (
    select
        site_luid,
        user_luid,
        version_number,
        max(site_role_id) as site_role_id,
        max(site_role) as site_role,
        max(is_system_admin) as is_system_admin,
        min(event_time) as valid_from,
        min_by(event_id, struct(event_time, event_id)) as first_event_id
    from versions
    group by site_luid, user_luid, version_number
)

select
    sha2(concat_ws('|', site_luid, user_luid, cast(version_number as string)), 256) as user_version_key,
    site_luid,
    user_luid,
    version_number,
    site_role_id,
    site_role,
    is_system_admin,
    valid_from,
    first_event_id,
    lead(valid_from) over (partition by site_luid, user_luid order by version_number) as valid_to,
    lag(site_role) over (partition by site_luid, user_luid order by version_number) as previous_site_role,
    lag(is_system_admin) over (partition by site_luid, user_luid order by version_number) as was_system_admin
from collapsed
