{#
  Site sign-ins sessionised per user and site: int_site_sessions, and fct_sessions' incremental
  runs, which pass `where` to read only the activity of the users with new activity, from the
  start of the session it falls in (macros/history_window.sql). A session holds its sign-in and
  what follows until the next sign-in, so none needs events from before its own sign-in.
#}
{% macro site_sessions(where=none) %}
    with activity as (
        {{ group_events('sessions', 'site', [
            ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'], ['event_date', 'date'],
            ['site_luid', 'string'], ['actor_user_luid', 'string'], ['silver_ingest_ts', 'timestamp']
        ]) }}
    ),

    numbered as (
        select
            *,
            sum(case when event_type = 'hist_login' then 1 else 0 end) over (
                partition by site_luid, actor_user_luid
                order by event_time, case when event_type = 'hist_login' then 0 else 1 end, event_id
                rows between unbounded preceding and current row
            ) as session_number
        from activity
        where actor_user_luid is not null{% if where %} and {{ where }}{% endif %}
    ),

    ends as (
        select
            site_luid,
            actor_user_luid,
            session_number,
            min(case when event_type = 'hist_logout' then event_time end) as signed_out_at
        from numbered
        where session_number > 0
        group by site_luid, actor_user_luid, session_number
    ),

    sessions as (
        select
            n.site_luid,
            n.actor_user_luid,
            n.session_number,
            max(case when n.event_type = 'hist_login' then n.event_id end) as session_id,
            min(case when n.event_type = 'hist_login' then n.event_time end) as signed_in_at,
            max(e.signed_out_at) as signed_out_at,
            count(
                case
                    when
                        n.event_type = 'hist_access_view'
                        and (e.signed_out_at is null or n.event_time <= e.signed_out_at)
                        then 1
                end
            ) as views_accessed,
            max(n.silver_ingest_ts) as silver_ingest_ts
        from numbered as n
        inner join ends as e
            on
                n.site_luid = e.site_luid
                and n.actor_user_luid = e.actor_user_luid
                and n.session_number = e.session_number
        group by n.site_luid, n.actor_user_luid, n.session_number
    )

    select
        session_id,
        site_luid,
        actor_user_luid as user_luid,
        signed_in_at,
        signed_out_at,
        case when signed_out_at is not null then 'sign_out' else 'no_sign_out' end as ended_by,
        cast(unix_timestamp(signed_out_at) - unix_timestamp(signed_in_at) as bigint) as duration_seconds,
        views_accessed,
        silver_ingest_ts
    from sessions
{% endmacro %}
