-- The feed's completeness as the refresh keeps it (ops.feed_completeness, pipelines/activity_log/feed.py):
-- one row per family x site x delivery hour. Marts read a source only through staging.
select
    family,
    site_luid,
    delivery_hour,
    files,
    records,
    first_event_time,
    last_event_time,
    lag_records,
    lag_seconds_sum,
    lag_seconds_max,
    through_ingest_ts
from {{ source('ops', 'feed_completeness') }}
