-- Who had what access, hour by hour, from the entity snapshots: every interval of a user's site
-- role, of a group membership and of a content ownership in one shape. An interval covers
-- [valid_from, valid_to); valid_to is NULL while it still holds. As of a time T:
--   where valid_from <= T and (valid_to > T or valid_to is null)
with site_roles as (
    select
        role_interval_id as access_interval_id,
        'site_role' as subject,
        site_luid,
        user_luid,
        cast(null as string) as group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        cast(null as string) as content_name,
        site_role,
        is_system_admin,
        valid_from,
        valid_to
    from {{ ref('int_snapshot_site_roles') }}
),

memberships as (
    select
        membership_interval_id as access_interval_id,
        'group_membership' as subject,
        site_luid,
        user_luid,
        group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        cast(null as string) as content_name,
        cast(null as string) as site_role,
        cast(null as boolean) as is_system_admin,
        valid_from,
        valid_to
    from {{ ref('int_snapshot_group_members') }}
),

ownerships as (
    select
        ownership_interval_id as access_interval_id,
        'content_ownership' as subject,
        site_luid,
        owner_luid as user_luid,
        cast(null as string) as group_luid,
        content_type,
        content_luid,
        content_name,
        cast(null as string) as site_role,
        cast(null as boolean) as is_system_admin,
        valid_from,
        valid_to
    from {{ ref('int_snapshot_content_owners') }}
),

intervals as (
    select * from site_roles
    union all
    select * from memberships
    union all
    select * from ownerships
)

select
    *,
    valid_to is null as is_current
from intervals
