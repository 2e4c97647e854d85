{{ config(materialized='incremental', incremental_strategy='merge', unique_key='version_key') }}
-- depends_on: {{ ref('stg_site__events') }}

-- Site-role history (type 2): every current-edition site event states its actor's site role and
-- system-admin level at that moment. A version starts where a user's role or admin level
-- differs from the previous observation and ends where the next version starts.
--
-- A table, kept incrementally (dim_users and rpt_privilege_escalations read it whole; it was
-- recomputed from all of history on every build). A user's new observations can change only the
-- version they fall in and the later ones: the version C that holds their first new observation is
-- their latest one starting before it. Silver is read from that first new observation on
-- (macros/history_window.sql); C's observations before it all state C's role, so C itself stands
-- in for them as a seed row (its start, first event, role and previous role come from the table).
-- A late observation can split a version or add one but never merge two, so the recomputed
-- versions C.. replace the user's by version_key and none is left over. version_key is plain text
-- (not a hash): erase replaces a LUID inside it, so it still matches the pseudonymised rows;
-- dim_users derives user_version_key from the columns.
{%- set observed -%}
    select
        site_luid,
        actor_user_luid as user_luid,
        site_role_id,
        site_role,
        coalesce(system_admin_level = 10, false) as is_system_admin,
        event_time,
        event_id,
        silver_ingest_ts
    from {{ ref('stg_site__events') }}
    where actor_user_luid is not null and site_role_id is not null
{%- endset %}

{% if is_incremental() %}
    {%- set starts -%}
        with touched as (
            select site_luid, user_luid, min(event_time) as first_new
            from ({{ observed }}) as o
            where silver_ingest_ts > {{ mart_watermark('silver_ingest_ts') }}
            group by site_luid, user_luid
        )

        select t.site_luid, t.user_luid, t.first_new, coalesce(max(m.version_number), 0) as seed_number
        from touched as t
        left join {{ this }} as m
            on m.site_luid <=> t.site_luid and m.user_luid = t.user_luid and m.valid_from < t.first_new
        group by t.site_luid, t.user_luid, t.first_new
    {%- endset -%}
    {%- set start = window_start("select min(first_new) from (" ~ starts ~ ") as s") %}
    with starts as (
        {{ starts }}
    ),

    observations as (
        select
            o.*,
            s.seed_number,
            cast(null as string) as seed_previous_site_role,
            cast(null as boolean) as seed_was_system_admin
        from ({{ observed }} and {{ in_window(start) }}) as o
        inner join starts as s
            on o.site_luid <=> s.site_luid and o.user_luid = s.user_luid and o.event_time >= s.first_new
        union all
        select
            m.site_luid,
            m.user_luid,
            m.site_role_id,
            m.site_role,
            m.is_system_admin,
            m.valid_from as event_time,
            m.first_event_id as event_id,
            m.silver_ingest_ts,
            s.seed_number,
            m.previous_site_role as seed_previous_site_role,
            m.was_system_admin as seed_was_system_admin
        from starts as s
        inner join {{ this }} as m
            on s.site_luid <=> m.site_luid and s.user_luid = m.user_luid and s.seed_number = m.version_number
    ),
{% else %}
    with observations as (
        select
            o.*,
            0 as seed_number,
            cast(null as string) as seed_previous_site_role,
            cast(null as boolean) as seed_was_system_admin
        from ({{ observed }}) as o
    ),
{% endif %}

flagged as (
    select
        *,
        case
            when
                lag(site_role_id) over (partition by site_luid, user_luid order by event_time, event_id) = site_role_id
                and lag(is_system_admin) over (partition by site_luid, user_luid order by event_time, event_id)
                = is_system_admin
                then 0
            else 1
        end as starts_version
    from observations
),

versions as (
    select
        *,
        -- the seed row is version seed_number, C (0: no seed, numbering starts at 1)
        greatest(seed_number - 1, 0) + sum(starts_version) over (
            partition by site_luid, user_luid order by event_time, event_id
            rows between unbounded preceding and current row
        ) as version_number
    from flagged
),

collapsed as (
    select
        site_luid,
        user_luid,
        version_number,
        max(seed_number) as seed_number,
        max(site_role_id) as site_role_id,
        max(site_role) as site_role,
        max(is_system_admin) as is_system_admin,
        min(event_time) as valid_from,
        min_by(event_id, struct(event_time, event_id)) as first_event_id,
        max(silver_ingest_ts) as silver_ingest_ts,
        max(seed_previous_site_role) as seed_previous_site_role,
        max(seed_was_system_admin) as seed_was_system_admin
    from versions
    group by site_luid, user_luid, version_number
),

history as (
    select
        concat_ws('|', coalesce(site_luid, ''), user_luid, cast(version_number as string)) as version_key,
        site_luid,
        user_luid,
        version_number,
        seed_number,
        site_role_id,
        site_role,
        is_system_admin,
        valid_from,
        first_event_id,
        lead(valid_from) over (partition by site_luid, user_luid order by version_number) as valid_to,
        -- C's predecessor is not read again: C keeps the previous role the table gave it
        case
            when version_number = seed_number then seed_previous_site_role
            else lag(site_role) over (partition by site_luid, user_luid order by version_number)
        end as previous_site_role,
        case
            when version_number = seed_number then seed_was_system_admin
            else lag(is_system_admin) over (partition by site_luid, user_luid order by version_number)
        end as was_system_admin,
        silver_ingest_ts
    from collapsed
)

select
    version_key,
    site_luid,
    user_luid,
    version_number,
    site_role_id,
    site_role,
    is_system_admin,
    valid_from,
    first_event_id,
    valid_to,
    previous_site_role,
    was_system_admin,
    silver_ingest_ts
from history
where version_number >= seed_number
