-- Sign-ins from an IP address or a browser (user agent) not seen for that user before: Cloud
-- Manager sign-ins that succeeded (tenant events), and a site user's view requests from the live
-- feed (vizql_http_request, the only site event with an address and a browser). A user counts
-- as known once first seen new_sign_in_source_learning_days before; until then every address is
-- new and none is reported.
with sightings as (
    select
        event_id,
        event_time,
        'tenant' as family,
        site_luid,
        cast(null as string) as user_luid,
        tenant_user_id,
        user_email,
        coalesce(tenant_user_id, user_email) as user_key,
        ip_address,
        user_agent
    from {{ ref('fct_logins') }}
    where family = 'tenant' and outcome = 'success' and coalesce(tenant_user_id, user_email) is not null
    union all
    select
        event_id,
        event_time,
        'site' as family,
        site_luid,
        actor_user_luid as user_luid,
        cast(null as string) as tenant_user_id,
        cast(null as string) as user_email,
        concat_ws('/', site_luid, actor_user_luid) as user_key,
        ip_address,
        user_agent
    from {{ ref('fct_content_access') }}
    where event_type = 'vizql_http_request' and actor_user_luid is not null
),

ranked as (
    select
        *,
        min(event_time) over (partition by family, user_key) as user_first_seen_at,
        row_number() over (partition by family, user_key, ip_address order by event_time, event_id) as nth_from_address,
        row_number() over (partition by family, user_key, user_agent order by event_time, event_id) as nth_from_agent
    from sightings
),

flagged as (
    select
        *,
        ip_address is not null and nth_from_address = 1 as is_new_address,
        user_agent is not null and nth_from_agent = 1 as is_new_browser
    from ranked
    where event_time >= user_first_seen_at + make_interval(0, 0, 0, {{ var('new_sign_in_source_learning_days') }})
)

select
    {{ detection_id('new_sign_in_source', ['event_id']) }} as detection_id,
    case
        when is_new_address and is_new_browser then 'high'
        when is_new_address then 'medium'
        else 'low'
    end as severity,
    event_id,
    event_time,
    family,
    site_luid,
    user_luid,
    tenant_user_id,
    user_email,
    ip_address,
    user_agent,
    is_new_address,
    is_new_browser,
    user_first_seen_at,
    array(event_id) as evidence_event_ids
from flagged
where is_new_address or is_new_browser
