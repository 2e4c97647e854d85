{{ config(materialized='incremental', incremental_strategy='merge', unique_key='job_luid',
          on_schema_change='append_new_columns', merge_window='first_event_at') }}
-- depends_on: {{ ref('stg_site__events') }}

-- Incremental: recompute the jobs with new state events (their later states arrive in later
-- deliveries); the merge replaces them by job_luid. Every event of such a job is at or after the
-- earliest of its new events and its first_event_at, so silver is read from there on only
-- (macros/history_window.sql): what a delivery reads is bounded by its jobs' spans, not the years.
-- A mart built before first_event_at existed is recomputed from all of history once.
{% if is_incremental_with(['first_event_at']) %}
    {%- set new_states -%}
        select job_luid, event_time
        from ({{ group_events('background_jobs', 'site', [
            ['job_luid', 'string'], ['event_time', 'timestamp'], ['silver_ingest_ts', 'timestamp']
        ]) }}) as e
        where job_luid is not null and silver_ingest_ts > {{ mart_watermark('silver_ingest_ts') }}
    {%- endset -%}
    {%- set start = window_start(
        "select least(min(n.event_time), min(m.first_event_at)) from (" ~ new_states ~ ") as n "
        ~ "left join " ~ this ~ " as m on m.job_luid = n.job_luid"
    ) -%}
    {{ background_job_states(
        in_window(start) ~ " and job_luid in (select job_luid from (" ~ new_states ~ ") as n)"
    ) }}
{% else %}
    -- the view's rows are this mart's, its columns those of the macro both branches use
    select * from {{ ref('int_background_job_states') }}  -- noqa: AM04
    -- in time order: a delivery's merge rewrites only the files of the newest jobs
    order by first_event_at
{% endif %}
