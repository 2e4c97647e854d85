{{ config(materialized='incremental', incremental_strategy='merge', unique_key='site_luid',
          on_schema_change='append_new_columns') }}
{%- set incremental = is_incremental_with(['named_at', 'silver_ingest_ts']) %}

-- Incremental: only the new silver rows are read. The sites they mention are merged with what
-- the dimension held: counts add up (silver is append-only), first / last seen widen, and the
-- names come from whichever Cloud Manager event is newer (named_at).
with site_rows as (
    select
        site_luid,
        event_time,
        silver_ingest_ts
    from {{ ref('stg_site__events') }}
    {{ newer_than_mart(incremental=incremental) }}
),

site_activity as (
    select
        site_luid,
        min(event_time) as first_event_at,
        max(event_time) as last_event_at,
        count(*) as site_events,
        max(silver_ingest_ts) as silver_ingest_ts
    from site_rows
    where site_luid is not null
    group by site_luid
),

tenant_rows as (
    select
        site_id,
        site_name,
        tenant_id,
        tenant_name,
        event_time,
        silver_ingest_ts
    from {{ ref('stg_tenant__events') }}
    {{ newer_than_mart(incremental=incremental) }}
),

-- Cloud Manager events name the site; siteId there is the site's LUID
tenant_names as (
    select
        site_id as site_luid,
        max_by(site_name, event_time) as site_name,
        max_by(tenant_id, event_time) as tenant_id,
        max_by(tenant_name, event_time) as tenant_name,
        max(event_time) as named_at,
        max(silver_ingest_ts) as silver_ingest_ts
    from tenant_rows
    where site_id is not null
    group by site_id
),

new_sites as (
    select
        coalesce(a.site_luid, n.site_luid) as site_luid,
        n.site_name,
        n.tenant_id,
        n.tenant_name,
        a.first_event_at,
        a.last_event_at,
        coalesce(a.site_events, 0) as site_events,
        n.named_at,
        greatest(a.silver_ingest_ts, n.silver_ingest_ts) as silver_ingest_ts
    from site_activity as a
    full outer join tenant_names as n on a.site_luid = n.site_luid
)

{% if incremental %}
    select
        s.site_luid,
        case when old.named_at > s.named_at or s.named_at is null then old.site_name else s.site_name end as site_name,
        case when old.named_at > s.named_at or s.named_at is null then old.tenant_id else s.tenant_id end as tenant_id,
        case when old.named_at > s.named_at or s.named_at is null then old.tenant_name else s.tenant_name end
            as tenant_name,
        least(old.first_event_at, s.first_event_at) as first_event_at,
        greatest(old.last_event_at, s.last_event_at) as last_event_at,
        coalesce(old.site_events, 0) + s.site_events as site_events,
        greatest(old.named_at, s.named_at) as named_at,
        greatest(old.silver_ingest_ts, s.silver_ingest_ts) as silver_ingest_ts
    from new_sites as s
    left join {{ this }} as old on s.site_luid = old.site_luid
{% else %}
    select * from new_sites
{% endif %}
