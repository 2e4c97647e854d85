-- Mass download or export: one user's downloads, exports and underlying-data views in a window of
-- mass_download_window_minutes (windows from the epoch, so the same on every rebuild) that reach
-- mass_download_min_events and mass_download_baseline_multiplier times the user's own mean per
-- active window over the mass_download_baseline_days before. A user with none in those days is
-- held to the minimum alone, and that counts as more severe.
{% set window_seconds = var('mass_download_window_minutes') * 60 %}
{% set baseline_windows = (var('mass_download_baseline_days') * 86400 / window_seconds) | int %}

with takes as (
    select
        event_id,
        event_time,
        site_luid,
        actor_user_luid as user_luid,
        content_luid,
        cast(floor(unix_timestamp(event_time) / {{ window_seconds }}) as bigint) as window_number
    from {{ ref('fct_content_access') }}
    where
        actor_user_luid is not null
        and (access_kind in ('download', 'export') or event_type = 'hist_access_underlying_data')
),

windows as (
    select
        site_luid,
        user_luid,
        window_number,
        count(*) as events,
        count(distinct content_luid) as content_items,
        min(event_time) as first_event_at,
        max(event_time) as last_event_at,
        slice(array_sort(collect_list(event_id)), 1, 100) as evidence_event_ids
    from takes
    group by site_luid, user_luid, window_number
),

baselines as (
    select
        w.site_luid,
        w.user_luid,
        w.window_number,
        avg(b.events) as baseline_events
    from windows as w
    left join windows as b
        on
            w.site_luid = b.site_luid
            and w.user_luid = b.user_luid
            and w.window_number > b.window_number
            and b.window_number >= w.window_number - {{ baseline_windows }}
    group by w.site_luid, w.user_luid, w.window_number
)

select
    {{ detection_id('mass_download', ['w.site_luid', 'w.user_luid', 'cast(w.window_number as string)']) }}
        as detection_id,
    case when b.baseline_events is null then 'high' else 'medium' end as severity,
    w.site_luid,
    w.user_luid,
    timestamp_seconds(w.window_number * {{ window_seconds }}) as window_start,
    timestamp_seconds((w.window_number + 1) * {{ window_seconds }}) as window_end,
    w.events,
    w.content_items,
    cast(b.baseline_events as double) as baseline_events,
    w.first_event_at,
    w.last_event_at,
    w.evidence_event_ids
from windows as w
inner join baselines as b
    on w.site_luid = b.site_luid and w.user_luid = b.user_luid and w.window_number = b.window_number
where
    w.events >= {{ var('mass_download_min_events') }}
    and (
        b.baseline_events is null
        or w.events >= {{ var('mass_download_baseline_multiplier') }} * b.baseline_events
    )
