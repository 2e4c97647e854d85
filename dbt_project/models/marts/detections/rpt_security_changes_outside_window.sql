-- Administrators' security changes outside the change window (conf gold: detections:
-- change_window, UTC): sign-in rate limits reset (site events), identity provider (SAML, OIDC)
-- configuration, tenant roles, sites created, suspended, reactivated or deleted, site limits,
-- private connections and tenant settings (Cloud Manager events).
{% set weekdays = var('change_window_weekdays') %}
{% set on_a_window_day = "date_format(event_time, 'E') in ('" ~ weekdays | join("', '") ~ "')"
    if weekdays else "false" %}

select
    {{ detection_id('security_change_outside_window', ['event_id']) }} as detection_id,
    case
        when event_type like '%saml%' or event_type like '%oidc%' or event_type like '%rate_limiting%' then 'high'
        when event_type in ('update_user_tenant_role', 'delete_site', 'suspend_site', 'update_tenant') then 'medium'
        else 'low'
    end as severity,
    event_id,
    family,
    event_type,
    event_time,
    date_format(event_time, 'E') as weekday,
    hour(event_time) as hour_utc,
    site_luid,
    actor_user_luid,
    actor_tenant_user_id,
    actor_email,
    actor_ip_address,
    subject_user_luid,
    outcome,
    array(event_id) as evidence_event_ids
from {{ ref('int_admin_security_changes') }}
where not (
    {{ on_a_window_day }}
    and hour(event_time) >= {{ var('change_window_start_hour') }}
    and hour(event_time) < {{ var('change_window_end_hour') }}
)
