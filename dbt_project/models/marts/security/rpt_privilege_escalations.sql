-- Site role raised to an administrator role, or system admin granted: from the site-role
-- history (what the site events say of their actors) and from Cloud Manager role changes.
with site_versions as (
    select * from {{ ref('int_site_user_role_versions') }}
    where version_number > 1
),

site_escalations as (
    select
        {{ user_version_key('site_luid', 'user_luid', 'version_number') }} as escalation_id,
        'site_role_history' as evidence,
        site_luid,
        user_luid,
        cast(null as string) as tenant_user_id,
        previous_site_role as old_role,
        site_role as new_role,
        valid_from as observed_at,
        first_event_id as event_id,
        case
            when is_system_admin and not was_system_admin then 'system_admin_granted'
            else 'site_admin_granted'
        end as escalation
    from site_versions
    where
        (is_system_admin and not was_system_admin)
        or (site_role like 'SiteAdministrator%' and coalesce(previous_site_role, '') not like 'SiteAdministrator%')
),

tenant_escalations as (
    select
        event_id as escalation_id,
        event_type as evidence,
        site_luid,
        cast(null as string) as user_luid,
        tenant_user_id,
        old_role,
        new_role,
        event_time as observed_at,
        event_id,
        case
            when action = 'tenant_role_changed' then 'tenant_admin_granted' else 'site_admin_granted'
        end as escalation
    from {{ ref('fct_user_lifecycle') }}
    where
        family = 'tenant'
        and action in ('site_role_changed', 'tenant_role_changed')
        and lower(new_role) like '%admin%'
        and lower(coalesce(old_role, '')) not like '%admin%'
),

escalations as (
    select * from site_escalations
    union all
    select * from tenant_escalations
)

select
    *,
    case
        when escalation in ('system_admin_granted', 'tenant_admin_granted') then 'critical' else 'high'
    end as severity,
    filter(array(event_id), e -> e is not null) as evidence_event_ids
from escalations
