{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

with security_events as (
    {{ mart_events('tenant', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['tenant_id', 'string'], ['site_id', 'string'], ['initiating_user_id', 'string'],
        ['initiating_user_email', 'string'], ['initiating_user_ip_address', 'string'],
        ['event_outcome', 'string'], ['resource_id', 'string'], ['idp_configuration_name', 'string'],
        ['is_secret_updated', 'boolean'], ['old_settings_value', 'string'], ['new_settings_value', 'string'],
        ['token_id', 'string'], ['token_name', 'string'], ['expires_at', 'string'], ['pat_user_id', 'string'],
        ['session_user_id', 'string'], ['user_id', 'string'], ['email', 'string'], ['old_role', 'string'],
        ['new_role', 'string'], ['silver_ingest_ts', 'timestamp']
    ]) }}
)

select
    event_id,
    event_type,
    event_time,
    tenant_id,
    site_id as site_luid,
    initiating_user_id as actor_tenant_user_id,
    initiating_user_email as actor_email,
    initiating_user_ip_address as actor_ip_address,
    case event_type
        when 'create_or_update_saml_config' then 'saml_config_changed'
        when 'delete_saml_config' then 'saml_config_deleted'
        when 'create_or_update_oidc_config' then 'oidc_config_changed'
        when 'delete_oidc_config' then 'oidc_config_deleted'
        when 'create_personal_access_token' then 'pat_created'
        when 'update_personal_access_token' then 'pat_updated'
        when 'revoke_personal_access_token' then 'pat_revoked'
        when 'batch_revoke_personal_access_token' then 'user_pats_revoked'
        when 'revoke_session' then 'session_revoked'
        when 'batch_revoke_session' then 'user_sessions_revoked'
        when 'update_user_tenant_role' then 'tenant_role_changed'
        when 'update_user_site_role' then 'site_role_changed'
    end as change_kind,
    lower(event_outcome) as outcome,
    -- whose token, session or role it was
    coalesce(pat_user_id, session_user_id, user_id) as subject_tenant_user_id,
    email as subject_email,
    resource_id as idp_resource_id,
    idp_configuration_name,
    is_secret_updated,
    old_settings_value,
    new_settings_value,
    token_id,
    token_name,
    expires_at as token_expires_at,
    old_role,
    new_role,
    silver_ingest_ts
from security_events
{{ newer_than_mart() }}
