-- Access review as of one time (dbt var access_review_as_of, UTC; default: the latest applied
-- snapshot hour): one row per user present in the users snapshots at that time, with the site
-- role, the groups and the content owned then. Each row is the state of the latest snapshot at
-- or before the time (snapshot_hour), since a snapshot holds until the next one.
with hours as (
    select
        entity_type,
        lower(site_luid) as site_luid,
        snapshot_hour
    from ({{ snapshot_hours() }}) as delivered
    where status = 'applied'
),

review_time as (
    {{ review_time() }}
),

users as (
    select
        lower(u.site_luid) as site_luid,
        lower(u.luid) as user_luid,
        u.name as user_name,
        u.display_name as user_display_name,
        u.email as user_email,
        u.site_role,
        u.is_system_admin,
        t.as_of
    from ({{ snapshot_history('users', [
        ['luid', 'string'], ['name', 'string'], ['display_name', 'string'], ['email', 'string'],
        ['site_role', 'string'], ['is_system_admin', 'boolean']
    ]) }}) as u
    inner join review_time as t on {{ current_at('u', 't.as_of') }}
    where u.luid is not null
),

group_names as (
    select
        lower(g.site_luid) as site_luid,
        lower(g.luid) as group_luid,
        g.name as group_name
    from ({{ snapshot_history('groups', [['luid', 'string'], ['name', 'string']]) }}) as g
    inner join review_time as t on {{ current_at('g', 't.as_of') }}
    where g.luid is not null
),

memberships as (
    select
        m.site_luid,
        m.user_luid,
        -- a group missing from the groups snapshot is named by its LUID
        coalesce(g.group_name, m.group_luid) as group_name
    from {{ ref('int_snapshot_group_members') }} as m
    inner join review_time as t on {{ current_at('m', 't.as_of') }}
    left join group_names as g on m.site_luid = g.site_luid and m.group_luid = g.group_luid
),

user_groups as (
    select
        site_luid,
        user_luid,
        array_join(array_sort(collect_list(group_name)), ', ') as groups,
        count(*) as group_count
    from memberships
    group by site_luid, user_luid
),

owned as (
    select
        o.site_luid,
        o.owner_luid as user_luid,
        count(*) as owned_content,
        count_if(o.content_type = 'workbook') as owned_workbooks,
        count_if(o.content_type = 'datasource') as owned_datasources
    from {{ ref('int_snapshot_content_owners') }} as o
    inner join review_time as t on {{ current_at('o', 't.as_of') }}
    where o.owner_luid is not null
    group by o.site_luid, o.owner_luid
),

-- the users snapshot each site's rows come from
basis as (
    select
        h.site_luid,
        max(h.snapshot_hour) as snapshot_hour
    from hours as h
    inner join review_time as t on h.snapshot_hour <= t.as_of
    where h.entity_type = 'users'
    group by h.site_luid
)

select
    {{ hash_key(['u.site_luid', 'u.user_luid', 'cast(u.as_of as string)']) }} as access_review_id,
    u.site_luid,
    u.user_luid,
    u.user_name,
    u.user_display_name,
    u.user_email,
    u.site_role,
    u.is_system_admin,
    g.groups,
    coalesce(g.group_count, 0) as group_count,
    coalesce(o.owned_content, 0) as owned_content,
    coalesce(o.owned_workbooks, 0) as owned_workbooks,
    coalesce(o.owned_datasources, 0) as owned_datasources,
    u.as_of,
    b.snapshot_hour
from users as u
left join user_groups as g on u.site_luid = g.site_luid and u.user_luid = g.user_luid
left join owned as o on u.site_luid = o.site_luid and u.user_luid = o.user_luid
left join basis as b on u.site_luid = b.site_luid
