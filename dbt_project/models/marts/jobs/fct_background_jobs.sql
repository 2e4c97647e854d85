{{ config(materialized='incremental', incremental_strategy='merge', unique_key='job_luid',
          on_schema_change='append_new_columns') }}
-- depends_on: {{ ref('stg_site__events') }}

-- Incremental: recompute the jobs with new state events (their later states arrive in later
-- deliveries); the merge replaces them by job_luid.
{% if is_incremental() %}
    with background_job_events as (
        {{ group_events('background_jobs', 'site', [['job_luid', 'string'], ['silver_ingest_ts', 'timestamp']]) }}
    ),

    touched as (
        select distinct job_luid
        from background_job_events
        {{ newer_than_mart() }}
    )
{% endif %}

select j.*
from {{ ref('int_background_job_states') }} as j
{% if is_incremental() %}
    left semi join touched as t on j.job_luid = t.job_luid
{% endif %}
