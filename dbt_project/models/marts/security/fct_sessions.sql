{{ config(materialized='incremental', incremental_strategy='merge', unique_key='session_id') }}
-- depends_on: {{ ref('stg_site__events') }}

-- Incremental: recompute the sessions of the users with new sign-ins, sign-outs or views (a new
-- sign-out can close an earlier session); the merge replaces them by session_id. A session's
-- silver_ingest_ts is the newest of its events, so the mart's newest is the watermark.
{% if is_incremental() %}
    with new_events as (
        select
            site_luid,
            actor_user_luid,
            event_type
        from {{ ref('stg_site__events') }}
        {{ newer_than_mart() }}
    ),

    touched as (
        select distinct
            site_luid,
            actor_user_luid as user_luid
        from new_events
        where event_type in ('hist_login', 'hist_logout', 'hist_access_view')
    )
{% endif %}

select s.*
from {{ ref('int_site_sessions') }} as s
{% if is_incremental() %}
    left semi join touched as t
        on s.site_luid = t.site_luid and s.user_luid = t.user_luid
{% endif %}
