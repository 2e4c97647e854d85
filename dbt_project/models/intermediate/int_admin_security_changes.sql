{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id') }}

-- Administrators' security changes (event group admin_security_changes, site and Cloud Manager
-- events) in one shape, kept incrementally: each delivery's new events are merged in, so that
-- rpt_security_changes_outside_window filters a small table instead of reading every event of
-- history. The change window is applied there, not here: a changed window applies to every row.
with site_changes as (
    {{ group_events('admin_security_changes', 'site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['user_luid', 'string'],
        ['silver_ingest_ts', 'timestamp']
    ]) }}
),

tenant_changes as (
    {{ group_events('admin_security_changes', 'tenant', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_id', 'string'], ['initiating_user_id', 'string'], ['initiating_user_email', 'string'],
        ['initiating_user_ip_address', 'string'], ['event_outcome', 'string'],
        ['silver_ingest_ts', 'timestamp']
    ]) }}
),

changes as (
    select
        event_id,
        'site' as family,
        event_type,
        event_time,
        site_luid,
        actor_user_luid,
        cast(null as string) as actor_tenant_user_id,
        cast(null as string) as actor_email,
        cast(null as string) as actor_ip_address,
        user_luid as subject_user_luid,
        'success' as outcome,
        silver_ingest_ts
    from site_changes
    {{ newer_than_mart() }}
    union all
    select
        event_id,
        'tenant' as family,
        event_type,
        event_time,
        site_id as site_luid,
        cast(null as string) as actor_user_luid,
        initiating_user_id as actor_tenant_user_id,
        initiating_user_email as actor_email,
        initiating_user_ip_address as actor_ip_address,
        cast(null as string) as subject_user_luid,
        lower(event_outcome) as outcome,
        silver_ingest_ts
    from tenant_changes
    {{ newer_than_mart() }}
)

select * from changes
