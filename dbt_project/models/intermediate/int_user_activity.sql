{{ config(materialized='incremental', incremental_strategy='merge', unique_key='activity_key') }}

-- Each site user's last successful sign-in and last authoring (content published, created, renamed,
-- moved or deleted, or a view opened in web authoring), each with its event: a table merged with each
-- delivery's new fact rows (rpt_inactive_licensed_users and rpt_licence_right_sizing, rebuilt from
-- every sign-in and every content access on every build, grew with the years). A pick is
-- struct(event_time, event_id): the greatest is the newest, the greatest id among events at one time.
-- activity_key is plain text, not a hash: erase replaces a LUID inside it, as in the LUID columns.
with fact_rows as (
    select
        site_luid,
        user_luid,
        event_time,
        event_id,
        true as is_sign_in,
        silver_ingest_ts
    from {{ ref('fct_logins') }}
    where
        family = 'site' and outcome = 'success'
        {{ newer_than_mart(keyword='and') }}
    union all
    select
        site_luid,
        actor_user_luid as user_luid,
        event_time,
        event_id,
        false as is_sign_in,
        silver_ingest_ts
    from {{ ref('fct_content_lifecycle') }}
    {{ newer_than_mart() }}
    union all
    select
        site_luid,
        actor_user_luid as user_luid,
        event_time,
        event_id,
        false as is_sign_in,
        silver_ingest_ts
    from {{ ref('fct_content_access') }}
    where
        event_type = 'hist_access_authoring_view'
        {{ newer_than_mart(keyword='and') }}
),

new_rows as (
    select
        concat_ws('|', site_luid, user_luid) as activity_key,
        site_luid,
        user_luid,
        max(case when is_sign_in then struct(event_time, event_id) end) as sign_in_pick,
        max(case when not is_sign_in then struct(event_time, event_id) end) as authoring_pick,
        max(silver_ingest_ts) as silver_ingest_ts
    from fact_rows
    where site_luid is not null and user_luid is not null
    group by site_luid, user_luid
),

merged as (
    {% if is_incremental() %}
        select
            n.activity_key,
            n.site_luid,
            n.user_luid,
            {{ newer_pick('n.sign_in_pick', 'o.last_sign_in_at', 'o.last_sign_in_event_id') }} as sign_in_pick,
            {{ newer_pick('n.authoring_pick', 'o.last_authored_at', 'o.last_authoring_event_id') }}
                as authoring_pick,
            greatest(n.silver_ingest_ts, o.silver_ingest_ts) as silver_ingest_ts
        from new_rows as n
        left join {{ this }} as o on n.activity_key = o.activity_key
    {% else %}
        select * from new_rows
    {% endif %}
)

select
    m.activity_key,
    m.site_luid,
    m.user_luid,
    m.sign_in_pick.event_time as last_sign_in_at,
    m.sign_in_pick.event_id as last_sign_in_event_id,
    m.authoring_pick.event_time as last_authored_at,
    m.authoring_pick.event_id as last_authoring_event_id,
    m.silver_ingest_ts
from merged as m
