-- N failed sign-ins within M minutes from one IP address or for one user (N, M: conf/ gold:
-- failed_login_burst): every failure of fct_logins, Cloud Manager's and the site's login_authentication
-- (which name the user by LUID only). Failures of a key no more than M minutes apart form one run; a run is
-- a burst when some M-minute window inside it holds at least N failures.
{% set window_seconds = var('failed_login_burst_window_minutes') * 60 %}

with failures as (
    select
        'ip_address' as key_type,
        ip_address as key_value,
        event_time,
        event_id
    from {{ ref('fct_logins') }}
    where outcome = 'failure' and ip_address is not null
    union all
    select
        'user' as key_type,
        coalesce(user_email, tenant_user_id, user_luid) as key_value,
        event_time,
        event_id
    from {{ ref('fct_logins') }}
    where outcome = 'failure' and coalesce(user_email, tenant_user_id, user_luid) is not null
),

windowed as (
    select
        *,
        count(*) over (
            partition by key_type, key_value
            order by unix_timestamp(event_time)
            range between {{ window_seconds }} preceding and current row
        ) as failures_in_window,
        case
            when
                unix_timestamp(event_time)
                - lag(unix_timestamp(event_time)) over (partition by key_type, key_value order by event_time, event_id)
                <= {{ window_seconds }}
                then 0
            else 1
        end as starts_run
    from failures
),

runs as (
    select
        *,
        sum(starts_run) over (
            partition by key_type, key_value order by event_time, event_id
            rows between unbounded preceding and current row
        ) as run_number
    from windowed
),

bursts as (
    select
        key_type,
        key_value,
        run_number,
        min(event_time) as first_failure_at,
        max(event_time) as last_failure_at,
        count(*) as failures,
        max(failures_in_window) as max_failures_in_window,
        min_by(event_id, struct(event_time, event_id)) as first_event_id,
        slice(array_sort(collect_list(event_id)), 1, 100) as evidence_event_ids
    from runs
    group by key_type, key_value, run_number
    having max(failures_in_window) >= {{ var('failed_login_burst_failures') }}
)

select
    {{ hash_key(['key_type', 'key_value', 'first_event_id']) }} as burst_id,
    key_type,
    key_value,
    first_failure_at,
    last_failure_at,
    failures,
    max_failures_in_window,
    -- twice the threshold inside one window is an attack more than a forgotten password
    case
        when max_failures_in_window >= 2 * {{ var('failed_login_burst_failures') }} then 'high' else 'medium'
    end as severity,
    first_event_id,
    evidence_event_ids
from bursts
