with site_activity as (
    select
        site_luid,
        min(event_time) as first_event_at,
        max(event_time) as last_event_at,
        count(*) as site_events
    from {{ ref('stg_site__events') }}
    where site_luid is not null
    group by site_luid
),

-- Cloud Manager events name the site; siteId there is the site's LUID
tenant_names as (
    select
        site_id as site_luid,
        max_by(site_name, event_time) as site_name,
        max_by(tenant_id, event_time) as tenant_id,
        max_by(tenant_name, event_time) as tenant_name
    from {{ ref('stg_tenant__events') }}
    where site_id is not null
    group by site_id
),

all_sites as (
    select site_luid from site_activity
    union
    select site_luid from tenant_names
)

select
    s.site_luid,
    n.site_name,
    n.tenant_id,
    n.tenant_name,
    a.first_event_at,
    a.last_event_at,
    coalesce(a.site_events, 0) as site_events
from all_sites as s
left join site_activity as a on s.site_luid = a.site_luid
left join tenant_names as n on s.site_luid = n.site_luid
