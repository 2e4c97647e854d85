{{ config(materialized='incremental', incremental_strategy='merge', unique_key='group_luid') }}

-- What group events and membership changes say about each group: a table merged with each
-- delivery's new rows (dim_groups, rebuilt from every group event on every build, grew with the
-- years). The newest name is kept with the event it came from (group_name_at, group_name_event_id)
-- so that a late event cannot rename a group. Plain columns, not structs: erase rewrites text.
with group_events as (
    {{ group_events('groups', 'site', [
        ['event_type', 'string'], ['event_time', 'timestamp'], ['event_id', 'string'], ['site_luid', 'string'],
        ['group_luid', 'string'], ['group_name', 'string'], ['name', 'string'], ['group_domain', 'string'],
        ['group_operation', 'string'], ['silver_ingest_ts', 'timestamp']
    ]) }}
),

membership as (
    select
        event_type,
        event_time,
        event_id,
        site_luid,
        group_luid,
        cast(null as string) as group_name,
        group_name as name,
        cast(null as string) as group_domain,
        cast(null as string) as group_operation,
        silver_ingest_ts
    from {{ ref('fct_group_membership_changes') }}
),

seen as (
    select
        *,
        coalesce(group_name, name) as known_name,
        event_type in ('hist_delete_group')
        or (event_type = 'create_delete_group' and lower(group_operation) = 'delete') as is_delete
    from (
        {{ union_by_name(['group_events', 'membership'], [
            'event_type', 'event_time', 'event_id', 'site_luid', 'group_luid', 'group_name', 'name',
            'group_domain', 'group_operation', 'silver_ingest_ts'
        ], each=newer_than_mart()) }}
    ) as unioned
    where group_luid is not null
),

new_rows as (
    select
        group_luid,
        max(site_luid) as site_luid,
        max(case when known_name is not null then struct(event_time, event_id, known_name) end) as name_pick,
        max(group_domain) as group_domain,
        min(event_time) as first_seen_at,
        max(event_time) as last_seen_at,
        max(case when is_delete then event_time end) as deleted_at,
        max(silver_ingest_ts) as silver_ingest_ts
    from seen
    group by group_luid
),

merged as (
    {% if is_incremental() %}
        select
            n.group_luid,
            greatest(n.site_luid, o.site_luid) as site_luid,
            {{ newer_pick(
                'n.name_pick', 'o.group_name_at', 'o.group_name_event_id', 'known_name', 'o.group_name'
            ) }} as name_pick,
            greatest(n.group_domain, o.group_domain) as group_domain,
            least(n.first_seen_at, o.first_seen_at) as first_seen_at,
            greatest(n.last_seen_at, o.last_seen_at) as last_seen_at,
            greatest(n.deleted_at, o.deleted_at) as deleted_at,
            greatest(n.silver_ingest_ts, o.silver_ingest_ts) as silver_ingest_ts
        from new_rows as n
        left join {{ this }} as o on n.group_luid = o.group_luid
    {% else %}
        select * from new_rows
    {% endif %}
)

select
    m.group_luid,
    m.site_luid,
    m.name_pick.known_name as group_name,
    m.name_pick.event_time as group_name_at,
    m.name_pick.event_id as group_name_event_id,
    m.group_domain,
    m.first_seen_at,
    m.last_seen_at,
    m.deleted_at,
    m.silver_ingest_ts
from merged as m
