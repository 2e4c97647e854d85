-- Hours in which a site usually delivers Activity Log files but did not: the site delivered in
-- that hour of the day on at least feed_usual_share of the previous feed_baseline_days days (those
-- since its first delivery), and not this time. Hours run from the site's first delivery to the
-- newest delivery of the whole feed, over the last feed_report_days days (conf/ feed:).
with deliveries as (
    select
        family,
        site_luid,
        delivery_hour
    from {{ source('ops', 'feed_completeness') }}
),

sites as (
    select
        family,
        site_luid,
        min(delivery_hour) as first_hour,
        max(delivery_hour) as last_hour,
        max(max(delivery_hour)) over () as newest_hour
    from deliveries
    group by family, site_luid
),

hours as (
    select
        s.family,
        s.site_luid,
        s.first_hour,
        s.last_hour,
        h.hour
    from sites as s
        lateral view explode(
            sequence(
                greatest(s.first_hour, s.newest_hour - make_interval(0, 0, 0, {{ var('feed_report_days') }})),
                s.newest_hour,
                interval 1 hour
            )
        ) h as hour
),

missing as (
    select h.*
    from hours as h
    left anti join deliveries as d
        on h.family = d.family and h.site_luid = d.site_luid and h.hour = d.delivery_hour
),

earlier as (
    select
        m.family,
        m.site_luid,
        m.hour,
        m.first_hour,
        m.last_hour,
        m.hour - make_interval(0, 0, 0, k.days) as same_hour
    from missing as m
        lateral view explode(sequence(1, {{ var('feed_baseline_days') }})) k as days
),

scored as (
    select
        e.family,
        e.site_luid,
        e.hour,
        e.last_hour,
        count_if(e.same_hour >= e.first_hour) as days_observed,
        count(d.delivery_hour) as days_delivered
    from earlier as e
    left join deliveries as d
        on e.family = d.family and e.site_luid = d.site_luid and e.same_hour = d.delivery_hour
    group by e.family, e.site_luid, e.hour, e.last_hour
)

select
    concat_ws('/', family, site_luid, date_format(hour, "yyyy-MM-dd'T'HH")) as gap_id,
    family,
    site_luid,
    hour as gap_hour,
    last_hour as last_delivery_hour,
    hour > last_hour as after_last_delivery,
    days_delivered,
    days_observed
from scored
where days_observed > 0 and days_delivered >= {{ var('feed_usual_share') }} * days_observed
