-- Permission rules that grant to the "All Users" group, that is to everyone on the site, present and
-- future: rules on items and the default rules of projects (which new content, and in a locked
-- project all its content, takes), as the entity histories hold them now. Deny rules are left out.
with all_users as (
    {{ all_users_groups(current_only=true) }}
),

rules as (
    select
        lower(site_luid) as site_luid,
        'item' as rule_kind,
        lower(item_type) as item_type,
        lower(item_luid) as item_luid,
        lower(grantee_type) as grantee_type,
        lower(grantee_luid) as grantee_luid,
        capability,
        mode
    from ({{ snapshot_history('permissions', [
        ['item_type', 'string'], ['item_luid', 'string'], ['grantee_type', 'string'],
        ['grantee_luid', 'string'], ['capability', 'string'], ['mode', 'string']
    ]) }}) as p
    where valid_to is null

    union all

    select
        lower(site_luid) as site_luid,
        'project_default:' || lower(content_type) as rule_kind,
        'project' as item_type,
        lower(project_luid) as item_luid,
        lower(grantee_type) as grantee_type,
        lower(grantee_luid) as grantee_luid,
        capability,
        mode
    from ({{ snapshot_history('default_permissions', [
        ['project_luid', 'string'], ['content_type', 'string'], ['grantee_type', 'string'],
        ['grantee_luid', 'string'], ['capability', 'string'], ['mode', 'string']
    ]) }}) as d
    where valid_to is null
),

names as (
    {%- for item_type, entity in [
        ('project', 'projects'), ('workbook', 'workbooks'), ('view', 'views'),
        ('datasource', 'datasources'), ('flow', 'flows')
    ] %}
        select
            lower(site_luid) as site_luid,
            '{{ item_type }}' as item_type,
            lower(luid) as item_luid,
            name as item_name
        from ({{ snapshot_history(entity, [['luid', 'string'], ['name', 'string']]) }}) as n
        where valid_to is null
        {{- "\n        union all" if not loop.last }}
    {%- endfor %}
)

select
    {{ hash_key([
        "'all_users_grant'", 'r.site_luid', 'r.rule_kind', 'r.item_type', 'r.item_luid', 'r.capability'
    ]) }} as all_users_grant_id,
    r.site_luid,
    r.rule_kind,
    r.item_type,
    r.item_luid,
    n.item_name,
    r.capability
from rules as r
inner join all_users as a on r.site_luid = a.site_luid and r.grantee_luid = a.group_luid
left join names as n on r.site_luid = n.site_luid and r.item_type = n.item_type and r.item_luid = n.item_luid
where r.grantee_type = 'group' and r.mode = 'Allow'
