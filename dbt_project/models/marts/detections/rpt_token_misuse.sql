-- Personal access tokens (PATs) misused: a sign-in with a PAT after its owner was deleted or, in
-- Cloud Manager, lost their role (the latest lifecycle event before the sign-in says so), and a
-- PAT created or used from an IP address never seen for that user before (Cloud Manager events
-- carry the initiating user's address; site events carry none). A user's first address is not
-- "new": there must be history to compare with.
with pat_sign_ins as (
    select
        event_id,
        event_time,
        family,
        site_luid,
        user_luid,
        tenant_user_id,
        user_email,
        token_name,
        ip_address,
        case when family = 'tenant' then tenant_user_id else concat_ws('/', site_luid, user_luid) end as owner_key
    from {{ ref('fct_logins') }}
    where login_method = 'pat' and outcome = 'success'
),

owner_changes as (
    select
        event_id,
        event_time,
        action,
        new_role,
        case when family = 'tenant' then tenant_user_id else concat_ws('/', site_luid, user_luid) end as owner_key
    from {{ ref('fct_user_lifecycle') }}
    where
        action = 'created'
        or action = 'deleted'
        or (family = 'tenant' and action in ('site_role_changed', 'tenant_role_changed'))
),

latest_change as (
    select
        s.event_id,
        max_by(struct(c.event_id, c.action, c.new_role), struct(c.event_time, c.event_id)) as change
    from pat_sign_ins as s
    inner join owner_changes as c on s.owner_key = c.owner_key and s.event_time > c.event_time
    group by s.event_id
),

after_owner_left as (
    select
        s.*,
        case
            when l.change.action = 'deleted' then 'pat_used_after_owner_deleted'
            else 'pat_used_after_role_removed'
        end as detection,
        l.change.event_id as owner_change_event_id
    from pat_sign_ins as s
    inner join latest_change as l on s.event_id = l.event_id
    where
        l.change.action = 'deleted'
        or (
            l.change.action like '%role_changed'
            and lower(coalesce(l.change.new_role, 'unlicensed')) in ('unlicensed', 'none', '')
        )
),

-- every Cloud Manager event that shows a user's address: successful sign-ins and their own changes
addressed as (
    select
        event_id,
        event_time,
        site_luid,
        tenant_user_id,
        user_email,
        ip_address,
        token_name,
        case when login_method = 'pat' then 'pat_used_from_new_address' end as detection
    from {{ ref('fct_logins') }}
    where family = 'tenant' and outcome = 'success' and ip_address is not null and tenant_user_id is not null
    union all
    select
        event_id,
        event_time,
        site_luid,
        actor_tenant_user_id as tenant_user_id,
        actor_email as user_email,
        actor_ip_address as ip_address,
        token_name,
        case when change_kind = 'pat_created' then 'pat_created_from_new_address' end as detection
    from {{ ref('fct_tenant_security_changes') }}
    where actor_ip_address is not null and actor_tenant_user_id is not null
),

ranked as (
    select
        *,
        row_number() over (partition by tenant_user_id, ip_address order by event_time, event_id) as nth_from_address,
        row_number() over (partition by tenant_user_id order by event_time, event_id) as nth_event
    from addressed
),

from_new_address as (
    select * from ranked
    where detection is not null and nth_from_address = 1 and nth_event > 1
),

found as (
    select
        detection,
        event_id,
        event_time,
        family,
        site_luid,
        user_luid,
        tenant_user_id,
        user_email,
        token_name,
        ip_address,
        owner_change_event_id
    from after_owner_left
    union all
    select
        detection,
        event_id,
        event_time,
        'tenant' as family,
        site_luid,
        cast(null as string) as user_luid,
        tenant_user_id,
        user_email,
        token_name,
        ip_address,
        cast(null as string) as owner_change_event_id
    from from_new_address
)

select
    {{ hash_key(['detection', 'event_id']) }} as detection_id,
    detection,
    case
        when detection = 'pat_used_after_owner_deleted' then 'critical'
        when detection = 'pat_used_after_role_removed' then 'high'
        else 'medium'
    end as severity,
    event_id,
    event_time,
    family,
    site_luid,
    user_luid,
    tenant_user_id,
    user_email,
    token_name,
    ip_address,
    owner_change_event_id,
    filter(array(event_id, owner_change_event_id), e -> e is not null) as evidence_event_ids
from found
