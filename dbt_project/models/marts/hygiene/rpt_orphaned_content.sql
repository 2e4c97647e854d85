-- Content whose owner can no longer look after it: workbooks, data sources, flows and projects the
-- entity histories (auditlake inventory, Tableau's entity snapshots) hold now whose owner is no
-- current user of the site (deleted) or is Unlicensed. Sites whose users the histories do not hold
-- are left out, since every owner there would look deleted.
with current_users as (
    select
        lower(site_luid) as site_luid,
        lower(luid) as user_luid,
        name as user_name,
        site_role
    from ({{ snapshot_history('users', [['luid', 'string'], ['name', 'string'], ['site_role', 'string']]) }}) as u
    where valid_to is null and luid is not null
),

sites_with_users as (
    select distinct site_luid from current_users
),

content as (
    select
        lower(site_luid) as site_luid,
        'project' as content_type,
        lower(luid) as content_luid,
        name as content_name,
        lower(luid) as project_luid,
        lower(owner_luid) as owner_luid
    from ({{ snapshot_history('projects', [['luid', 'string'], ['name', 'string'], ['owner_luid', 'string']]) }}) as p
    where valid_to is null and luid is not null

    union all

    {{ current_content() }}
)

select
    {{ hash_key(["'orphaned_content'", 'c.site_luid', 'c.content_type', 'c.content_luid']) }} as orphaned_content_id,
    c.site_luid,
    c.content_type,
    c.content_luid,
    c.content_name,
    c.project_luid,
    c.owner_luid,
    u.user_name as owner_name,
    u.site_role as owner_site_role,
    case when u.user_luid is null then 'owner_deleted' else 'owner_unlicensed' end as reason
from content as c
inner join sites_with_users as s on c.site_luid = s.site_luid
left join current_users as u on c.site_luid = u.site_luid and c.owner_luid = u.user_luid
where c.owner_luid is not null and (u.user_luid is null or u.site_role = 'Unlicensed')
