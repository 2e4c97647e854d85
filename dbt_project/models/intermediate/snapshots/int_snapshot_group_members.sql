-- Group memberships from the group-members snapshots: one row per (site, group, user, interval)
-- of membership. Consecutive versions of one membership (another delivered column changed) are
-- merged (gaps and islands); a membership missing from a snapshot and back later is a new
-- interval; one that ended has valid_to, the first snapshot hour without it.
with versions as (
    select
        lower(site_luid) as site_luid,
        lower(group_luid) as group_luid,
        lower(user_luid) as user_luid,
        valid_from,
        valid_to
    from ({{ snapshot_history('group_members', [['group_luid', 'string'], ['user_luid', 'string']]) }}) as members
    where group_luid is not null and user_luid is not null
),

flagged as (
    select
        *,
        case when lag(valid_to) over by_member = valid_from then 0 else 1 end as starts_interval
    from versions
    window by_member as (partition by site_luid, group_luid, user_luid order by valid_from)
),

numbered as (
    select
        *,
        sum(starts_interval) over (
            partition by site_luid, group_luid, user_luid order by valid_from
            rows between unbounded preceding and current row
        ) as interval_number
    from flagged
)

select
    {{ hash_key(["'group_membership'", 'site_luid', 'group_luid', 'user_luid', 'cast(min(valid_from) as string)']) }}
        as membership_interval_id,
    site_luid,
    group_luid,
    user_luid,
    min(valid_from) as valid_from,
    max_by(valid_to, valid_from) as valid_to
from numbered
group by site_luid, group_luid, user_luid, interval_number
