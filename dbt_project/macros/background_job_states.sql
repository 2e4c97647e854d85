{#
  Background jobs folded from their state events, one row each: int_background_job_states, and
  fct_background_jobs' incremental runs, which pass `where` to read only the state events of the
  jobs that have new ones, from the earliest of them on (macros/history_window.sql).
#}
{% macro background_job_states(where=none) %}
    with background_job_events as (
        {{ group_events('background_jobs', 'site', [
            ['job_luid', 'string'], ['job_id', 'bigint'], ['job_type', 'string'], ['site_luid', 'string'],
            ['obj_type', 'string'], ['obj_luid', 'string'], ['obj_name', 'string'], ['task_luid', 'string'],
            ['schedule_name', 'string'], ['is_run_now', 'boolean'], ['event_state', 'string'],
            ['event_time', 'timestamp'], ['event_date', 'date'], ['duration', 'bigint'], ['notes', 'string'],
            ['event_id', 'string'], ['event_type', 'string'], ['pool_name', 'string'],
            ['bridge_client_computer_name', 'string'], ['silver_ingest_ts', 'timestamp']
        ]) }}
    ),

    states as (
        select *
        from background_job_events
        where job_luid is not null{% if where %} and {{ where }}{% endif %}
    ),

    jobs as (
        select
            job_luid,
            max(case when event_type = 'background_job' then job_id end) as job_id,
            max(case when event_type = 'bridge_job' then job_id end) as bridge_job_id,
            max_by(event_type, struct(event_time, event_id)) as event_type,
            max(pool_name) as bridge_pool_name,
            max(bridge_client_computer_name) as bridge_client_computer_name,
            max(job_type) as job_type,
            max(site_luid) as site_luid,
            max(obj_type) as obj_type,
            max(obj_luid) as obj_luid,
            max(obj_name) as obj_name,
            max(task_luid) as task_luid,
            max(schedule_name) as schedule_name,
            max(is_run_now) as is_run_now,
            min(case when event_state = 'Pending' then event_time end) as queued_at,
            min(case when event_state = 'InProgress' then event_time end) as started_at,
            max(case when event_state in ('Success', 'Failed', 'Cancelled') then event_time end) as finished_at,
            max_by(event_state, struct(event_time, event_id)) as last_state,
            max_by(duration, struct(event_time, event_id)) as reported_duration_seconds,
            max_by(notes, struct(event_time, event_id)) as notes,
            count(*) as state_events,
            min(event_time) as first_event_at,
            max(silver_ingest_ts) as silver_ingest_ts
        from states
        group by job_luid
    ),

    timelines as (
        select
            job_luid,
            -- "<time> <state>" sorts in time order as text
            array_join(
                array_sort(collect_list(concat(date_format(event_time, 'yyyy-MM-dd HH:mm:ss.SSS'), ' ', event_state))),
                ' > '
            ) as state_timeline
        from states
        group by job_luid
    )

    select
        j.job_luid,
        j.job_id,
        j.job_type,
        j.site_luid,
        lower(j.obj_type) as object_type,
        j.obj_luid as object_luid,
        j.obj_name as object_name,
        j.task_luid,
        j.schedule_name,
        j.is_run_now,
        j.queued_at,
        j.started_at,
        j.finished_at,
        case j.last_state
            when 'Success' then 'success'
            when 'Failed' then 'failed'
            when 'Cancelled' then 'cancelled'
            when 'InProgress' then 'in_progress'
            when 'Pending' then 'pending'
            else 'other'
        end as result,
        cast(unix_timestamp(j.started_at) - unix_timestamp(j.queued_at) as bigint) as queue_seconds,
        cast(unix_timestamp(j.finished_at) - unix_timestamp(j.started_at) as bigint) as run_seconds,
        j.reported_duration_seconds,
        case when j.last_state = 'Failed' then j.notes end as failure_notes,
        t.state_timeline,
        j.state_events,
        j.first_event_at,
        case when j.event_type = 'bridge_job' then 'bridge' else 'tableau_cloud' end as runner,
        j.bridge_job_id,
        j.bridge_pool_name,
        j.bridge_client_computer_name,
        j.silver_ingest_ts
    from jobs as j
    inner join timelines as t on j.job_luid = t.job_luid
{% endmacro %}
