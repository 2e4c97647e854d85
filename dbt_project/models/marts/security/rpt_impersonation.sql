-- Site events where the user who initiated the action is not the user it was done as
-- (an administrator acting as someone else, or a service acting for a user).
select
    event_id,
    event_type,
    event_time,
    site_luid,
    initiating_user_luid,
    actor_user_luid,
    site_role as actor_site_role,
    'medium' as severity,
    array(event_id) as evidence_event_ids
from {{ ref('stg_site__events') }}
where
    initiating_user_luid is not null
    and actor_user_luid is not null
    and initiating_user_luid != actor_user_luid
