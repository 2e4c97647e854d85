{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

with site_logins as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['client_id', 'string'],
        ['event_outcome', 'string'], ['event_outcome_reason', 'string'], ['silver_ingest_ts', 'timestamp']
    ]) }}
),

tenant_logins as (
    {{ mart_events('tenant', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_id', 'string'], ['initiating_user_id', 'string'], ['initiating_user_email', 'string'],
        ['initiating_user_ip_address', 'string'], ['initiating_user_agent', 'string'],
        ['event_outcome', 'string'], ['event_outcome_reason', 'string'], ['idp_name', 'string'],
        ['new_session_id', 'string'], ['token_name', 'string'], ['silver_ingest_ts', 'timestamp']
    ]) }}
),

-- The bundled site reference documents sign-in records only for sign-ins that succeeded; the live
-- feed adds eventOutcome (and its reason) to every site event: a record without one succeeded.
-- login_authentication is the site's record of every sign-in attempt: its eventOutcome (success,
-- unauthorized, client_error, internal_error) is what makes a failure, so its failed sign-ins count
-- where Cloud Manager's do (rpt_failed_login_bursts).
-- The site log does not say how the user authenticated unless a personal access token was used.
site_shaped as (
    select
        event_id,
        'site' as family,
        event_type,
        event_time,
        site_luid,
        actor_user_luid as user_luid,
        cast(null as string) as tenant_user_id,
        cast(null as string) as user_email,
        case when event_type = 'hist_login_with_pat' then 'pat' else 'unspecified' end as login_method,
        case when event_outcome is null or lower(event_outcome) = 'success' then 'success' else 'failure' end
            as outcome,
        event_outcome_reason as outcome_reason,
        cast(null as string) as ip_address,
        cast(null as string) as user_agent,
        cast(null as string) as session_id,
        client_id as token_name,
        silver_ingest_ts
    from site_logins
),

-- Cloud Manager records every attempt with its outcome, the identity provider and the client.
tenant_shaped as (
    select
        event_id,
        'tenant' as family,
        event_type,
        event_time,
        site_id as site_luid,
        cast(null as string) as user_luid,
        initiating_user_id as tenant_user_id,
        initiating_user_email as user_email,
        case
            when event_type = 'personal_access_token_login' then 'pat'
            when lower(idp_name) like '%saml%' then 'saml'
            when lower(idp_name) like '%oidc%' or lower(idp_name) like '%openid%' then 'oidc'
            when idp_name is null then 'password'
            else 'unspecified'
        end as login_method,
        case when lower(event_outcome) = 'success' then 'success' else 'failure' end as outcome,
        event_outcome_reason as outcome_reason,
        initiating_user_ip_address as ip_address,
        initiating_user_agent as user_agent,
        new_session_id as session_id,
        token_name,
        silver_ingest_ts
    from tenant_logins
),

unioned as (
    select * from site_shaped
    union all
    select * from tenant_shaped
)

select * from unioned
{{ newer_than_mart() }}
