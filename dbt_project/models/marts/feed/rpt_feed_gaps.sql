-- Hours in which a site usually delivers Activity Log files but did not: the site delivered in
-- that hour of the day on at least feed_usual_share of the previous feed_baseline_days days (those
-- since its first delivery), and not this time. Hours run from the site's first delivery to the
-- feed's newest complete hour (below), over the last feed_report_days days (conf/ feed:).
with deliveries as (
    select
        family,
        site_luid,
        delivery_hour
    from {{ ref('stg_ops__feed_completeness') }}
),

sources_per_hour as (
    select
        delivery_hour,
        count(*) as sources
    from deliveries
    group by delivery_hour
),

-- Judged up to the feed's newest hour in which at least half of its sources (sites and the
-- tenant) delivered: a late file from one site alone does not make the others look quiet.
feed_end as (
    select max(delivery_hour) as newest_hour
    from sources_per_hour
    where sources * 2 >= (select count(distinct d.family, d.site_luid) as n from deliveries as d)
),

sites as (
    select
        d.family,
        d.site_luid,
        e.newest_hour,
        min(d.delivery_hour) as first_hour,
        max(d.delivery_hour) as last_hour
    from deliveries as d
    cross join feed_end as e
    group by d.family, d.site_luid, e.newest_hour
    having min(d.delivery_hour) <= e.newest_hour
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
