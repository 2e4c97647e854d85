{{ config(materialized='incremental', incremental_strategy='merge', unique_key='content_luid') }}

-- What the content facts say about each piece of content: a table merged with each delivery's new
-- fact rows (dim_content and rpt_stale_content, rebuilt from all of fct_content_access on every
-- build, grew with the years). Each "newest value" is kept with the event it came from
-- (<value>_at, <value>_event_id): a delivery's value replaces the kept one only if its event is
-- newer, so a late event cannot rename content, and the merge gives what a full refresh gives.
-- Plain columns, not structs: erase rewrites text columns.
with fact_rows as (
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        cast(null as string) as owner_luid,
        action,
        true as is_mention,
        false as is_access,
        silver_ingest_ts
    from {{ ref('fct_content_lifecycle') }}
    {{ newer_than_mart() }}
    union all
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        new_owner_luid as owner_luid,
        'ownership_transfer' as action,
        true as is_mention,
        false as is_access,
        silver_ingest_ts
    from {{ ref('fct_ownership_transfers') }}
    {{ newer_than_mart() }}
    union all
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        cast(null as string) as owner_luid,
        access_kind as action,
        true as is_mention,
        true as is_access,
        silver_ingest_ts
    from {{ ref('fct_content_access') }}
    {{ newer_than_mart() }}
    union all
    -- a view opened is its workbook opened (rpt_stale_content), not a mention of the workbook
    select
        workbook_luid as content_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_name,
        event_time,
        event_id,
        cast(null as string) as site_luid,
        cast(null as string) as owner_luid,
        access_kind as action,
        false as is_mention,
        true as is_access,
        silver_ingest_ts
    from {{ ref('fct_content_access') }}
    {{ newer_than_mart() }}
    union all
    select
        content_luid,
        content_type,
        content_name,
        event_time,
        event_id,
        site_luid,
        cast(null as string) as owner_luid,
        'permission_change' as action,
        true as is_mention,
        false as is_access,
        silver_ingest_ts
    from {{ ref('fct_permission_changes') }}
    {{ newer_than_mart() }}
),

-- a pick is struct(event_time, event_id, value): the greatest is the newest event's value
new_rows as (
    select
        content_luid,
        max(is_mention) as is_mentioned,
        max(case when is_mention then site_luid end) as site_luid,
        max(case when is_mention and content_type is not null then struct(event_time, event_id, content_type) end)
            as type_pick,
        max(case when is_mention and content_name is not null then struct(event_time, event_id, content_name) end)
            as name_pick,
        max(case when is_mention and owner_luid is not null then struct(event_time, event_id, owner_luid) end)
            as owner_pick,
        min(case when is_mention then event_time end) as first_seen_at,
        max(case when is_mention then event_time end) as last_seen_at,
        max(case when is_mention and action = 'publish' then event_time end) as last_published_at,
        max(case when is_mention and action = 'delete' then event_time end) as deleted_at,
        max(case when is_access then struct(event_time, event_id) end) as access_pick,
        max(silver_ingest_ts) as silver_ingest_ts
    from fact_rows
    where content_luid is not null
    group by content_luid
),

merged as (
    {% if is_incremental() %}
        select
            n.content_luid,
            n.is_mentioned or coalesce(o.is_mentioned, false) as is_mentioned,
            greatest(n.site_luid, o.site_luid) as site_luid,
            {{ newer_pick(
                'n.type_pick', 'o.content_type_at', 'o.content_type_event_id', 'content_type', 'o.content_type'
            ) }} as type_pick,
            {{ newer_pick(
                'n.name_pick', 'o.content_name_at', 'o.content_name_event_id', 'content_name', 'o.content_name'
            ) }} as name_pick,
            {{ newer_pick(
                'n.owner_pick', 'o.current_owner_at', 'o.current_owner_event_id', 'owner_luid', 'o.current_owner_luid'
            ) }} as owner_pick,
            least(n.first_seen_at, o.first_seen_at) as first_seen_at,
            greatest(n.last_seen_at, o.last_seen_at) as last_seen_at,
            greatest(n.last_published_at, o.last_published_at) as last_published_at,
            greatest(n.deleted_at, o.deleted_at) as deleted_at,
            {{ newer_pick('n.access_pick', 'o.last_accessed_at', 'o.last_access_event_id') }} as access_pick,
            greatest(n.silver_ingest_ts, o.silver_ingest_ts) as silver_ingest_ts
        from new_rows as n
        left join {{ this }} as o on n.content_luid = o.content_luid
    {% else %}
        select * from new_rows
    {% endif %}
)

select
    m.content_luid,
    m.is_mentioned,
    m.site_luid,
    m.type_pick.content_type,
    m.type_pick.event_time as content_type_at,
    m.type_pick.event_id as content_type_event_id,
    m.name_pick.content_name,
    m.name_pick.event_time as content_name_at,
    m.name_pick.event_id as content_name_event_id,
    m.owner_pick.owner_luid as current_owner_luid,
    m.owner_pick.event_time as current_owner_at,
    m.owner_pick.event_id as current_owner_event_id,
    m.first_seen_at,
    m.last_seen_at,
    m.last_published_at,
    m.deleted_at,
    m.access_pick.event_time as last_accessed_at,
    m.access_pick.event_id as last_access_event_id,
    m.silver_ingest_ts
from merged as m
