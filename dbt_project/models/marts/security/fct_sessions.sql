{{ config(materialized='incremental', incremental_strategy='merge', unique_key='session_id',
          merge_window='signed_in_at') }}
-- depends_on: {{ ref('stg_site__events') }}

-- Incremental: recompute the sessions of the users with new sign-ins, sign-outs or views (a new
-- sign-out can close an earlier session, a late sign-in split one); the merge replaces them by
-- session_id. A session's silver_ingest_ts is the newest of its events, so the mart's newest is the
-- watermark. A user's new activity can change only the session it falls in (the user's latest
-- sign-in at or before it) and later ones, so silver is read from the earliest such sign-in on
-- (macros/history_window.sql): what a delivery reads is bounded by its sessions, not the years.
{% if is_incremental() %}
    {%- set new_activity -%}
        select site_luid, actor_user_luid, min(event_time) as first_new
        from ({{ group_events('sessions', 'site', [
            ['site_luid', 'string'], ['actor_user_luid', 'string'], ['event_time', 'timestamp'],
            ['silver_ingest_ts', 'timestamp']
        ]) }}) as e
        where actor_user_luid is not null and silver_ingest_ts > {{ mart_watermark('silver_ingest_ts') }}
        group by site_luid, actor_user_luid
    {%- endset -%}
    {%- set start = window_start(
        "select min(coalesce(last_sign_in, first_new)) from ("
        ~ "select n.first_new, max(m.signed_in_at) as last_sign_in from (" ~ new_activity ~ ") as n "
        ~ "left join " ~ this ~ " as m on m.site_luid = n.site_luid and m.user_luid = n.actor_user_luid "
        ~ "and m.signed_in_at <= n.first_new group by n.site_luid, n.actor_user_luid, n.first_new) as o"
    ) -%}
    {{ site_sessions(
        in_window(start) ~ " and (site_luid, actor_user_luid) in "
        ~ "(select site_luid, actor_user_luid from (" ~ new_activity ~ ") as n)"
    ) }}
{% else %}
    -- the view's rows are this mart's, its columns those of the macro both branches use
    select * from {{ ref('int_site_sessions') }}  -- noqa: AM04
    -- in time order: a delivery's merge rewrites only the files of the newest sessions
    order by signed_in_at
{% endif %}
