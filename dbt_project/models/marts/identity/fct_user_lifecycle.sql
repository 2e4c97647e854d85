{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

with site_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['user_luid', 'string'],
        ['target_user_luid', 'string'], ['name', 'string'], ['for_user_name', 'string'],
        ['email', 'string'], ['user_operation', 'string'], ['event_site_role', 'string'],
        ['site_admin_level', 'bigint'], ['silver_ingest_ts', 'timestamp']
    ]) }}
),

tenant_events as (
    {{ mart_events('tenant', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_id', 'string'], ['initiating_user_id', 'string'], ['user_id', 'string'],
        ['user_name', 'string'], ['email', 'string'], ['old_role', 'string'], ['new_role', 'string'],
        ['silver_ingest_ts', 'timestamp']
    ]) }}
),

site_shaped as (
    select
        event_id,
        'site' as family,
        event_type,
        event_time,
        site_luid,
        actor_user_luid,
        cast(null as string) as actor_tenant_user_id,
        coalesce(target_user_luid, user_luid) as user_luid,
        cast(null as string) as tenant_user_id,
        coalesce(for_user_name, name) as user_name,
        email as user_email,
        case
            when event_type = 'user_create_delete' and lower(user_operation) = 'delete' then 'deleted'
            when event_type = 'user_create_delete' then 'created'
            when event_type in ('hist_create_user', 'hist_create_system_user') then 'created'
            when event_type in ('hist_delete_user', 'hist_delete_system_user') then 'deleted'
            when event_type = 'hist_update_user_site_role' then 'site_role_changed'
        end as action,
        cast(null as string) as old_role,
        -- user_create_delete names the role granted; hist_update_user_site_role only says
        -- whether the user is now a site administrator
        case
            when event_type = 'user_create_delete' then event_site_role
            when site_admin_level > 0 then 'SiteAdministrator'
        end as new_role,
        silver_ingest_ts
    from site_events
),

tenant_shaped as (
    select
        event_id,
        'tenant' as family,
        event_type,
        event_time,
        site_id as site_luid,
        cast(null as string) as actor_user_luid,
        initiating_user_id as actor_tenant_user_id,
        cast(null as string) as user_luid,
        user_id as tenant_user_id,
        user_name,
        email as user_email,
        case event_type
            when 'create_user' then 'created'
            when 'delete_user' then 'deleted'
            when 'update_user_site_role' then 'site_role_changed'
            when 'update_user_tenant_role' then 'tenant_role_changed'
        end as action,
        old_role,
        new_role,
        silver_ingest_ts
    from tenant_events
),

unioned as (
    {{ union_by_name(['site_shaped', 'tenant_shaped'], [
        'event_id', 'family', 'event_type', 'event_time', 'site_luid', 'actor_user_luid', 'actor_tenant_user_id',
        'user_luid', 'tenant_user_id', 'user_name', 'user_email', 'action', 'old_role', 'new_role',
        'silver_ingest_ts'
    ]) }}
)

select * from unioned
{{ newer_than_mart() }}
