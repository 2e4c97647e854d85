-- Every detection of every report in one shape: what `auditlake alerts` sends and what a SIEM
-- would ingest (a table keeps no order: sort by detected_at). detection_id is stable across
-- rebuilds (the same finding keeps its id).
with found as (
    select
        burst_id as detection_id,
        'failed_login_burst' as detection,
        'rpt_failed_login_bursts' as report,
        severity,
        last_failure_at as detected_at,
        cast(null as string) as site_luid,
        case when key_type = 'user' then key_value end as user_key,
        concat(
            failures, ' failed sign-ins ', case when key_type = 'user' then 'for ' else 'from ' end, key_value,
            ' between ', first_failure_at, ' and ', last_failure_at
        ) as summary,
        evidence_event_ids
    from {{ ref('rpt_failed_login_bursts') }}
    union all
    select
        {{ detection_id('privilege_escalation', ['escalation_id']) }} as detection_id,
        escalation as detection,
        'rpt_privilege_escalations' as report,
        severity,
        observed_at as detected_at,
        site_luid,
        coalesce(user_luid, tenant_user_id) as user_key,
        concat(escalation, ': ', coalesce(old_role, '(none)'), ' -> ', coalesce(new_role, '(none)')) as summary,
        evidence_event_ids
    from {{ ref('rpt_privilege_escalations') }}
    union all
    select
        {{ detection_id('impersonation', ['event_id']) }} as detection_id,
        'impersonation' as detection,
        'rpt_impersonation' as report,
        severity,
        event_time as detected_at,
        site_luid,
        initiating_user_luid as user_key,
        concat(event_type, ' by ', initiating_user_luid, ' as ', actor_user_luid) as summary,
        evidence_event_ids
    from {{ ref('rpt_impersonation') }}
    union all
    select
        detection_id,
        'mass_download' as detection,
        'rpt_mass_downloads' as report,
        severity,
        last_event_at as detected_at,
        site_luid,
        user_luid as user_key,
        concat(
            events, ' downloads/exports of ', content_items, ' items in ', window_start, ' - ', window_end,
            ' (usual: ', coalesce(cast(round(baseline_events, 1) as string), 'none'), ')'
        ) as summary,
        evidence_event_ids
    from {{ ref('rpt_mass_downloads') }}
    union all
    select
        detection_id,
        detection,
        'rpt_token_misuse' as report,
        severity,
        event_time as detected_at,
        site_luid,
        coalesce(user_email, tenant_user_id, user_luid) as user_key,
        concat(detection, ': token ', coalesce(token_name, '?'), coalesce(concat(' from ', ip_address), '')) as summary,
        evidence_event_ids
    from {{ ref('rpt_token_misuse') }}
    union all
    select
        detection_id,
        'new_sign_in_source' as detection,
        'rpt_new_sign_in_sources' as report,
        severity,
        event_time as detected_at,
        site_luid,
        coalesce(user_email, tenant_user_id, user_luid) as user_key,
        concat(
            'first sign-in ',
            concat_ws(
                ' and ', case when is_new_address then concat('from ', ip_address) end,
                case when is_new_browser then concat('with ', user_agent) end
            )
        ) as summary,
        evidence_event_ids
    from {{ ref('rpt_new_sign_in_sources') }}
    union all
    select
        detection_id,
        'security_change_outside_window' as detection,
        'rpt_security_changes_outside_window' as report,
        severity,
        event_time as detected_at,
        site_luid,
        coalesce(actor_email, actor_tenant_user_id, actor_user_luid) as user_key,
        concat(event_type, ' on ', weekday, ' at ', lpad(cast(hour_utc as string), 2, '0'), ':xx UTC') as summary,
        evidence_event_ids
    from {{ ref('rpt_security_changes_outside_window') }}
    union all
    select
        detection_id,
        concat('licence_', reason) as detection,
        'rpt_licence_right_sizing' as report,
        severity,
        idle_since as detected_at,
        site_luid,
        coalesce(user_email, user_luid) as user_key,
        concat(site_role, ' -> ', suggested_role, ' (', reason, ')') as summary,
        evidence_event_ids
    from {{ ref('rpt_licence_right_sizing') }}
    union all
    select
        detection_id,
        'stale_content' as detection,
        'rpt_stale_content' as report,
        severity,
        stale_since as detected_at,
        site_luid,
        current_owner_luid as user_key,
        concat(
            content_type, ' ', coalesce(content_name, content_luid), ' not opened since ',
            coalesce(cast(last_accessed_at as string), 'it was first seen')
        ) as summary,
        evidence_event_ids
    from {{ ref('rpt_stale_content') }}
)

select * from found
