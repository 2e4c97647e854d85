-- Site roles from the users snapshots: one row per (site, user, interval) in which the user held
-- one site role and system-admin flag. Silver keeps a version per change of any delivered column
-- (a new display name, e-mail, ...); consecutive versions (one ends where the next starts) with
-- the same role and flag are merged here (gaps and islands). A user missing from a snapshot and
-- back later gets a new interval; a user who vanished has a closed last interval.
with versions as (
    select
        lower(site_luid) as site_luid,
        lower(luid) as user_luid,
        site_role,
        is_system_admin,
        valid_from,
        valid_to
    from ({{ snapshot_history('users', [
        ['luid', 'string'], ['site_role', 'string'], ['is_system_admin', 'boolean']
    ]) }}) as users
    where luid is not null
),

flagged as (
    select
        *,
        case
            when
                lag(valid_to) over by_user = valid_from
                and lag(site_role) over by_user <=> site_role
                and lag(is_system_admin) over by_user <=> is_system_admin
                then 0
            else 1
        end as starts_interval
    from versions
    window by_user as (partition by site_luid, user_luid order by valid_from)
),

numbered as (
    select
        *,
        sum(starts_interval) over (
            partition by site_luid, user_luid order by valid_from
            rows between unbounded preceding and current row
        ) as interval_number
    from flagged
)

select
    {{ hash_key(["'site_role'", 'site_luid', 'user_luid', 'cast(min(valid_from) as string)']) }}
        as role_interval_id,
    site_luid,
    user_luid,
    max(site_role) as site_role,
    max(is_system_admin) as is_system_admin,
    min(valid_from) as valid_from,
    -- the last version's end: NULL while it is current
    max_by(valid_to, valid_from) as valid_to
from numbered
group by site_luid, user_luid, interval_number
