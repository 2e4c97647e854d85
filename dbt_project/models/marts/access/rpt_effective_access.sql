-- Who holds which capability on each project, workbook, view, data source and flow, as of one
-- time (dbt var access_review_as_of, UTC; default: the latest applied snapshot hour), resolved
-- from the entity histories the way Tableau resolves permissions (the rules are in the model's
-- description). One row per capability a user holds, with the rule that grants it.
with review_time as (
    {{ review_time() }}
),

users as (
    select
        lower(u.site_luid) as site_luid,
        lower(u.luid) as user_luid,
        u.name as user_name,
        u.site_role,
        coalesce(u.is_system_admin, false)
        or u.site_role in (
            'ServerAdministrator', 'SiteAdministrator', 'SiteAdministratorCreator', 'SiteAdministratorExplorer'
        ) as is_admin
    from ({{ snapshot_history('users', [
        ['luid', 'string'], ['name', 'string'], ['site_role', 'string'], ['is_system_admin', 'boolean']
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
    select distinct
        lower(m.site_luid) as site_luid,
        lower(m.group_luid) as group_luid,
        lower(m.user_luid) as user_luid
    from ({{ snapshot_history('group_members', [['group_luid', 'string'], ['user_luid', 'string']]) }}) as m
    inner join review_time as t on {{ current_at('m', 't.as_of') }}
),

group_set_names as (
    select
        lower(s.site_luid) as site_luid,
        lower(s.luid) as group_set_luid,
        s.name as group_set_name
    from ({{ snapshot_history('group_sets', [['luid', 'string'], ['name', 'string']]) }}) as s
    inner join review_time as t on {{ current_at('s', 't.as_of') }}
),

group_set_groups as (
    select distinct
        lower(s.site_luid) as site_luid,
        lower(s.group_set_luid) as group_set_luid,
        lower(s.group_luid) as group_luid
    from ({{ snapshot_history('group_set_members', [['group_set_luid', 'string'], ['group_luid', 'string']]) }}) as s
    inner join review_time as t on {{ current_at('s', 't.as_of') }}
),

-- Tableau grants a group set's rules to the users who belong to every one of its groups
group_set_users as (
    select
        s.site_luid,
        s.group_set_luid,
        m.user_luid
    from group_set_groups as s
    inner join memberships as m on s.site_luid = m.site_luid and s.group_luid = m.group_luid
    group by s.site_luid, s.group_set_luid, m.user_luid
    having count(distinct m.group_luid) = (
        select count(*) from group_set_groups as a
        where a.site_luid = s.site_luid and a.group_set_luid = s.group_set_luid
    )
),

projects as (
    select
        lower(p.site_luid) as site_luid,
        lower(p.luid) as project_luid,
        p.name as project_name,
        lower(p.owner_luid) as owner_luid,
        coalesce(p.content_permissions like 'LockedToProject%', false) as is_locked
    from ({{ snapshot_history('projects', [
        ['luid', 'string'], ['name', 'string'], ['owner_luid', 'string'], ['content_permissions', 'string']
    ]) }}) as p
    inner join review_time as t on {{ current_at('p', 't.as_of') }}
    where p.luid is not null
),

content as (
    select
        site_luid,
        'project' as item_type,
        project_luid as item_luid,
        project_name as item_name,
        project_luid,
        owner_luid,
        cast(null as string) as workbook_luid
    from projects

    {%- for item_type, entity, in_workbook in [
        ('workbook', 'workbooks', false), ('view', 'views', true),
        ('datasource', 'datasources', false), ('flow', 'flows', false)
    ] %}

        union all

        select
            lower(c.site_luid) as site_luid,
            '{{ item_type }}' as item_type,
            lower(c.luid) as item_luid,
            c.name as item_name,
            lower(c.project_luid) as project_luid,
            lower(c.owner_luid) as owner_luid,
            {{ 'lower(c.workbook_luid)' if in_workbook else 'cast(null as string)' }} as workbook_luid
        from ({{ snapshot_history(entity, [
            ['luid', 'string'], ['name', 'string'], ['project_luid', 'string'], ['owner_luid', 'string']
        ] + ([['workbook_luid', 'string']] if in_workbook else [])) }}) as c
        inner join review_time as t on {{ current_at('c', 't.as_of') }}
        where c.luid is not null
    {%- endfor %}
),

items as (
    select
        c.*,
        p.project_name,
        p.owner_luid as project_owner_luid,
        coalesce(p.is_locked, false) and c.item_type != 'project' as is_locked
    from content as c
    left join projects as p on c.site_luid = p.site_luid and c.project_luid = p.project_luid
),

item_rules as (
    select
        lower(r.site_luid) as site_luid,
        lower(r.item_type) as item_type,
        lower(r.item_luid) as item_luid,
        lower(r.grantee_type) as grantee_type,
        lower(r.grantee_luid) as grantee_luid,
        r.capability,
        r.mode
    from ({{ snapshot_history('permissions', [
        ['item_type', 'string'], ['item_luid', 'string'], ['grantee_type', 'string'],
        ['grantee_luid', 'string'], ['capability', 'string'], ['mode', 'string']
    ]) }}) as r
    inner join review_time as t on {{ current_at('r', 't.as_of') }}
),

default_rules as (
    select
        lower(r.site_luid) as site_luid,
        lower(r.project_luid) as project_luid,
        lower(r.content_type) as content_type,
        lower(r.grantee_type) as grantee_type,
        lower(r.grantee_luid) as grantee_luid,
        r.capability,
        r.mode
    from ({{ snapshot_history('default_permissions', [
        ['project_luid', 'string'], ['content_type', 'string'], ['grantee_type', 'string'],
        ['grantee_luid', 'string'], ['capability', 'string'], ['mode', 'string']
    ]) }}) as r
    inner join review_time as t on {{ current_at('r', 't.as_of') }}
),

views_with_rules as (
    select distinct
        site_luid,
        item_luid
    from item_rules
    where item_type = 'view'
),

-- The rules that apply to each item: in a locked project the project's default rules for the
-- content type (a view takes its workbook's) and nothing set on the item; otherwise the item's
-- own, and for a view without rules of its own its workbook's (a workbook shown as tabs).
applicable as (
    select
        i.site_luid,
        i.item_type,
        i.item_luid,
        d.grantee_type,
        d.grantee_luid,
        d.capability,
        d.mode,
        'project_default:' || i.project_name as source
    from items as i
    inner join default_rules as d
        on
            i.site_luid = d.site_luid
            and i.project_luid = d.project_luid
            and d.content_type = case when i.item_type = 'view' then 'workbook' else i.item_type end
    where i.is_locked

    union all

    select
        i.site_luid,
        i.item_type,
        i.item_luid,
        r.grantee_type,
        r.grantee_luid,
        r.capability,
        r.mode,
        cast(null as string) as source
    from items as i
    left join views_with_rules as v on i.item_type = 'view' and i.site_luid = v.site_luid and i.item_luid = v.item_luid
    inner join item_rules as r
        on
            i.site_luid = r.site_luid
            and (
                (i.item_type = r.item_type and i.item_luid = r.item_luid)
                or (
                    i.item_type = 'view' and v.item_luid is null
                    and r.item_type = 'workbook' and i.workbook_luid = r.item_luid
                )
            )
    where not i.is_locked
),

-- each rule for each user it reaches: a user rule, a group's members, a group set's users
user_rules as (
    select
        a.site_luid,
        a.item_type,
        a.item_luid,
        a.grantee_luid as user_luid,
        a.capability,
        a.mode,
        true as is_user_rule,
        coalesce(a.source, 'user_rule') as granted_by
    from applicable as a
    where a.grantee_type = 'user'

    union all

    select
        a.site_luid,
        a.item_type,
        a.item_luid,
        m.user_luid,
        a.capability,
        a.mode,
        false as is_user_rule,
        coalesce(a.source, 'group_rule:' || coalesce(g.group_name, a.grantee_luid)) as granted_by
    from applicable as a
    inner join memberships as m on a.site_luid = m.site_luid and a.grantee_luid = m.group_luid
    left join group_names as g on a.site_luid = g.site_luid and a.grantee_luid = g.group_luid
    where a.grantee_type = 'group'

    union all

    select
        a.site_luid,
        a.item_type,
        a.item_luid,
        s.user_luid,
        a.capability,
        a.mode,
        false as is_user_rule,
        coalesce(a.source, 'group_rule:' || coalesce(n.group_set_name, a.grantee_luid)) as granted_by
    from applicable as a
    inner join group_set_users as s on a.site_luid = s.site_luid and a.grantee_luid = s.group_set_luid
    left join group_set_names as n on a.site_luid = n.site_luid and a.grantee_luid = n.group_set_luid
    where a.grantee_type in ('group_set', 'groupset')
),

-- a user rule decides; without one, any group Deny wins over group Allows
deciding as (
    select
        *,
        max(is_user_rule) over (
            partition by site_luid, item_type, item_luid, user_luid, capability
        ) as has_user_rule
    from user_rules
),

decided as (
    select
        site_luid,
        item_type,
        item_luid,
        user_luid,
        capability,
        not bool_or(mode = 'Deny') as is_allowed,
        min(case when mode = 'Allow' then granted_by end) as granted_by
    from deciding
    where is_user_rule = has_user_rule
    group by site_luid, item_type, item_luid, user_luid, capability
),

capabilities as (
    select
        item_type,
        capability
    from ({{ tableau_capabilities() }}) as t
),

-- what an administrator, the item's owner or its project's owner holds whatever the rules say
granted_by_role as (
    select
        i.site_luid,
        i.item_type,
        i.item_luid,
        u.user_luid,
        c.capability,
        case
            when u.is_admin then 'site_role_admin'
            when i.owner_luid = u.user_luid then 'owner'
            else 'project_owner'
        end as granted_by
    from items as i
    inner join users as u
        on
            i.site_luid = u.site_luid
            and (u.is_admin or i.owner_luid = u.user_luid or i.project_owner_luid = u.user_luid)
    inner join capabilities as c on i.item_type = c.item_type
),

held as (
    select
        site_luid,
        item_type,
        item_luid,
        user_luid,
        capability,
        granted_by,
        0 as precedence
    from granted_by_role

    union all

    select
        site_luid,
        item_type,
        item_luid,
        user_luid,
        capability,
        granted_by,
        1 as precedence
    from decided
    where is_allowed
),

-- the site role's ceiling: an administrator holds everything, Unlicensed nothing, a Viewer only
-- what views and comments, an Explorer neither overwrites, moves nor runs
capped as (
    select
        h.*,
        u.user_name,
        u.site_role,
        row_number() over (
            partition by h.site_luid, h.item_type, h.item_luid, h.user_luid, h.capability
            order by h.precedence, h.granted_by
        ) as pick
    from held as h
    inner join users as u on h.site_luid = u.site_luid and h.user_luid = u.user_luid
    where
        u.is_admin
        or (
            coalesce(u.site_role, 'Unlicensed') != 'Unlicensed'
            and not (
                u.site_role in ('Viewer', 'Guest', 'ReadOnly')
                and h.capability not in (
                    'Read', 'Filter', 'ViewComments', 'AddComment', 'ExportImage', 'ExportData', 'ShareView',
                    'ViewUnderlyingData'
                )
            )
            and not (u.site_role = 'Explorer' and h.capability in ('Write', 'ChangeHierarchy', 'Execute'))
        )
)

select
    {{ hash_key([
        'c.site_luid', 'c.item_type', 'c.item_luid', 'c.user_luid', 'c.capability', 'cast(t.as_of as string)'
    ]) }} as effective_access_id,
    c.site_luid,
    c.item_type,
    c.item_luid,
    i.item_name,
    i.project_luid,
    i.project_name,
    c.user_luid,
    c.user_name,
    c.site_role,
    c.capability,
    c.granted_by,
    t.as_of
from capped as c
inner join items as i on c.site_luid = i.site_luid and c.item_type = i.item_type and c.item_luid = i.item_luid
cross join review_time as t
where c.pick = 1
