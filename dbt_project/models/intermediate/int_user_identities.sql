{{ config(materialized='incremental', incremental_strategy='merge', unique_key='user_luid') }}

-- The newest name and e-mail address the user lifecycle events give for each site user: a table
-- merged with each delivery's new events, so that dim_users is built from an intermediate table, not
-- from a fact. Each value is kept with the event it came from (<value>_at, <value>_event_id): an event
-- that carries no name (a role change) leaves the name as it was, and a late event renames nobody.
-- Plain columns, not structs: erase rewrites text columns.
with new_rows as (
    select
        user_luid,
        max(case when user_name is not null then struct(event_time, event_id, user_name) end) as name_pick,
        max(case when user_email is not null then struct(event_time, event_id, user_email) end) as email_pick,
        max(silver_ingest_ts) as silver_ingest_ts
    from {{ ref('fct_user_lifecycle') }}
    where
        user_luid is not null
        {{ newer_than_mart(keyword='and') }}
    group by user_luid
),

merged as (
    {% if is_incremental() %}
        select
            n.user_luid,
            {{ newer_pick('n.name_pick', 'o.user_name_at', 'o.user_name_event_id', 'user_name', 'o.user_name') }}
                as name_pick,
            {{ newer_pick('n.email_pick', 'o.user_email_at', 'o.user_email_event_id', 'user_email', 'o.user_email') }}
                as email_pick,
            greatest(n.silver_ingest_ts, o.silver_ingest_ts) as silver_ingest_ts
        from new_rows as n
        left join {{ this }} as o on n.user_luid = o.user_luid
    {% else %}
        select * from new_rows
    {% endif %}
)

select
    m.user_luid,
    m.name_pick.user_name,
    m.name_pick.event_time as user_name_at,
    m.name_pick.event_id as user_name_event_id,
    m.email_pick.user_email,
    m.email_pick.event_time as user_email_at,
    m.email_pick.event_id as user_email_event_id,
    m.silver_ingest_ts
from merged as m
