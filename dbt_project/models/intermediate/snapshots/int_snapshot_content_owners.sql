-- Owners of workbooks and data sources from their snapshots: one row per (site, content, owner
-- interval). Consecutive versions (a rename, a new size, ...) with the same owner are merged
-- (gaps and islands); content_name is the name at the interval's last version. An interval that
-- directly follows another of the same content is an ownership transfer.
with versions as (
    select
        lower(site_luid) as site_luid,
        'workbook' as content_type,
        lower(luid) as content_luid,
        name as content_name,
        lower(owner_luid) as owner_luid,
        valid_from,
        valid_to
    from ({{ snapshot_history('workbooks', [
        ['luid', 'string'], ['name', 'string'], ['owner_luid', 'string']
    ]) }}) as workbooks
    where luid is not null

    union all

    select
        lower(site_luid) as site_luid,
        'datasource' as content_type,
        lower(luid) as content_luid,
        name as content_name,
        lower(owner_luid) as owner_luid,
        valid_from,
        valid_to
    from ({{ snapshot_history('datasources', [
        ['luid', 'string'], ['name', 'string'], ['owner_luid', 'string']
    ]) }}) as datasources
    where luid is not null
),

flagged as (
    select
        *,
        case
            when lag(valid_to) over by_content = valid_from and lag(owner_luid) over by_content <=> owner_luid then 0
            else 1
        end as starts_interval
    from versions
    window by_content as (partition by site_luid, content_type, content_luid order by valid_from)
),

numbered as (
    select
        *,
        sum(starts_interval) over (
            partition by site_luid, content_type, content_luid order by valid_from
            rows between unbounded preceding and current row
        ) as interval_number
    from flagged
)

select
    {{ hash_key([
        "'content_ownership'", 'site_luid', 'content_type', 'content_luid', 'cast(min(valid_from) as string)'
    ]) }} as ownership_interval_id,
    site_luid,
    content_type,
    content_luid,
    max_by(content_name, valid_from) as content_name,
    max(owner_luid) as owner_luid,
    min(valid_from) as valid_from,
    max_by(valid_to, valid_from) as valid_to
from numbered
group by site_luid, content_type, content_luid, interval_number
