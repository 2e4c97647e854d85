-- An audit of the audit log: access changes one source shows and the other does not, within the
-- hours the snapshots cover (a site's first to its last applied snapshot hour, per entity type).
--  * snapshots_only: the snapshots show a change at hour h (a site role that follows another, a
--    membership starting or ending, a content owner that follows another), so it happened in
--    (the site's previous applied hour, h]; the Activity Log has no matching event for the same
--    subject in (previous hour - 1 hour, h + 1 hour] (a membership's end: nor a deletion of the user).
--  * activity_log_only: an event (hist_update_user_site_role, a membership added or removed, an
--    ownership transfer of a workbook or data source) after the site's first snapshot hour, and
--    the snapshots show no matching change at the first applied hour at or after it nor at the
--    one after that (a change can spill past the hour). Judged once that second hour is applied.
-- Every user of a site is in "All Users" by being a user: joining it is matched by the user's
-- creation, as leaving any group is by the user's deletion (Tableau logs these, not the membership).
with delivered_hours as (
    select distinct
        entity_type,
        lower(site_luid) as site_luid,
        snapshot_hour
    from ({{ snapshot_hours() }}) as delivered
    where status = 'applied'
),

hours as (
    select
        entity_type,
        site_luid,
        snapshot_hour,
        lag(snapshot_hour) over by_site as previous_hour,
        lead(snapshot_hour) over by_site as next_hour
    from delivered_hours
    window by_site as (partition by entity_type, site_luid order by snapshot_hour)
),

-- a group's LUID never changes: any version names it
all_users_groups as (
    {{ all_users_groups(current_only=false) }}
),

-- snapshot side ------------------------------------------------------------------------------
role_steps as (
    select
        *,
        lag(site_role) over by_user as previous_site_role,
        lag(valid_to) over by_user as previous_valid_to
    from {{ ref('int_snapshot_site_roles') }}
    window by_user as (partition by site_luid, user_luid order by valid_from)
),

-- a membership's start is an addition, its end a removal
membership_edges as (
    select
        m.site_luid,
        m.group_luid,
        m.user_luid,
        m.edge.change,
        m.edge.at_hour
    from (
        select
            site_luid,
            group_luid,
            user_luid,
            explode(array(
                named_struct('change', 'added', 'at_hour', valid_from),
                named_struct('change', 'removed', 'at_hour', valid_to)
            )) as edge
        from {{ ref('int_snapshot_group_members') }}
    ) as m
    where m.edge.at_hour is not null
),

owner_steps as (
    select
        *,
        lag(owner_luid) over by_content as previous_owner_luid,
        lag(valid_to) over by_content as previous_valid_to
    from {{ ref('int_snapshot_content_owners') }}
    window by_content as (partition by site_luid, content_type, content_luid order by valid_from)
),

snapshot_steps as (
    select
        'site_role' as subject,
        'users' as entity_type,
        site_luid,
        user_luid,
        cast(null as string) as group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        user_luid as match_key,
        concat('site role ', coalesce(previous_site_role, '(none)'), ' -> ', coalesce(site_role, '(none)')) as detail,
        valid_from as at_hour
    from role_steps
    where previous_valid_to = valid_from and not (previous_site_role <=> site_role)
    union all
    select
        'group_membership' as subject,
        'group_members' as entity_type,
        site_luid,
        user_luid,
        group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        concat_ws('|', group_luid, user_luid, change) as match_key,
        case change when 'added' then 'added to group' else 'removed from group' end as detail,
        at_hour
    from membership_edges
    union all
    select
        'content_ownership' as subject,
        concat(content_type, 's') as entity_type,
        site_luid,
        owner_luid as user_luid,
        cast(null as string) as group_luid,
        content_type,
        content_luid,
        concat_ws('|', content_type, content_luid) as match_key,
        concat('owner ', coalesce(previous_owner_luid, '(none)'), ' -> ', coalesce(owner_luid, '(none)')) as detail,
        valid_from as at_hour
    from owner_steps
    where previous_valid_to = valid_from and not (previous_owner_luid <=> owner_luid)
),

snapshot_changes as (
    select
        s.subject,
        s.site_luid,
        s.user_luid,
        s.group_luid,
        s.content_type,
        s.content_luid,
        s.match_key,
        s.detail,
        h.previous_hour as changed_after,
        s.at_hour as changed_by
    from snapshot_steps as s
    inner join hours as h
        on s.entity_type = h.entity_type and s.site_luid = h.site_luid and s.at_hour = h.snapshot_hour
    -- what the site's first snapshot shows was there before the window
    where h.previous_hour is not null
),

-- Activity Log side --------------------------------------------------------------------------
log_roles as (
    select
        'site_role' as subject,
        'users' as entity_type,
        site_luid,
        user_luid,
        cast(null as string) as group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        user_luid as match_key,
        -- the event does not say which role the user was given
        'site role changed' as detail,
        event_time,
        event_id,
        event_type
    from {{ ref('fct_user_lifecycle') }}
    where family = 'site' and event_type = 'hist_update_user_site_role' and user_luid is not null
),

log_memberships as (
    select
        'group_membership' as subject,
        'group_members' as entity_type,
        site_luid,
        user_luid,
        group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        concat_ws('|', group_luid, user_luid, change) as match_key,
        case change when 'added' then 'added to group' else 'removed from group' end as detail,
        event_time,
        event_id,
        event_type
    from {{ ref('fct_group_membership_changes') }}
    where change in ('added', 'removed') and group_luid is not null and user_luid is not null
),

log_owners as (
    select
        'content_ownership' as subject,
        concat(content_type, 's') as entity_type,
        site_luid,
        new_owner_luid as user_luid,
        cast(null as string) as group_luid,
        content_type,
        content_luid,
        concat_ws('|', content_type, content_luid) as match_key,
        concat('owner ', coalesce(old_owner_luid, '(none)'), ' -> ', coalesce(new_owner_luid, '(none)')) as detail,
        event_time,
        event_id,
        source_event_type as event_type
    from {{ ref('fct_ownership_transfers') }}
    where content_type in ('workbook', 'datasource') and content_luid is not null
),

-- deleting a user ends their memberships with no event per group (Tableau logs the deletion only)
log_user_deletions as (
    select
        site_luid,
        user_luid,
        event_time
    from {{ ref('fct_user_lifecycle') }}
    where family = 'site' and action = 'deleted' and user_luid is not null
),

-- creating a user adds them to "All Users" with no membership event (Tableau logs the creation only)
log_all_users_joins as (
    select
        c.site_luid,
        a.group_luid,
        c.user_luid,
        c.event_time
    from {{ ref('fct_user_lifecycle') }} as c
    inner join all_users_groups as a on c.site_luid = a.site_luid
    where c.family = 'site' and c.action = 'created' and c.user_luid is not null
),

log_events as (
    {{ union_by_name(['log_roles', 'log_memberships', 'log_owners'], [
        'subject', 'entity_type', 'site_luid', 'user_luid', 'group_luid', 'content_type', 'content_luid',
        'match_key', 'detail', 'event_time', 'event_id', 'event_type'
    ]) }}
),

-- each event's first applied hour at or after it, with that hour's neighbours: events and hours
-- on one timeline per site and entity type, read backwards (a running minimum: linear, where a
-- look ahead would be quadratic)
timeline as (
    select
        *,
        0 as is_hour,
        cast(null as struct<snapshot_hour: timestamp, previous_hour: timestamp, next_hour: timestamp>) as hour
    from log_events
    union all
    select
        cast(null as string) as subject,
        entity_type,
        site_luid,
        cast(null as string) as user_luid,
        cast(null as string) as group_luid,
        cast(null as string) as content_type,
        cast(null as string) as content_luid,
        cast(null as string) as match_key,
        cast(null as string) as detail,
        snapshot_hour as event_time,
        cast(null as string) as event_id,
        cast(null as string) as event_type,
        1 as is_hour,
        named_struct('snapshot_hour', snapshot_hour, 'previous_hour', previous_hour, 'next_hour', next_hour) as hour
    from hours
),

located as (
    select
        *,
        min(hour) over (
            partition by entity_type, site_luid order by event_time desc, is_hour desc
            rows between unbounded preceding and current row
        ) as next_snapshot
    from timeline
),

log_judged as (
    select
        l.subject,
        l.site_luid,
        l.user_luid,
        l.group_luid,
        l.content_type,
        l.content_luid,
        l.match_key,
        l.detail,
        l.event_time,
        l.event_id,
        l.event_type,
        l.next_snapshot.snapshot_hour as first_hour,
        l.next_snapshot.next_hour as second_hour
    from located as l
    -- after the site's first snapshot, and decidable: the hour after the first one is applied
    where l.is_hour = 0 and l.next_snapshot.previous_hour is not null and l.next_snapshot.next_hour is not null
),

snapshots_only as (
    select
        s.*,
        'snapshots_only' as seen_in,
        cast(null as string) as event_id,
        cast(null as string) as event_type
    from snapshot_changes as s
    left anti join log_events as e
        on
            s.subject = e.subject
            and s.site_luid = e.site_luid
            and s.match_key = e.match_key
            and e.event_time > s.changed_after - interval 1 hour
            and e.event_time <= s.changed_by + interval 1 hour
    left anti join log_user_deletions as d
        on
            s.subject = 'group_membership'
            and s.detail = 'removed from group'
            and s.site_luid = d.site_luid
            and s.user_luid = d.user_luid
            and d.event_time > s.changed_after - interval 1 hour
            and d.event_time <= s.changed_by + interval 1 hour
    left anti join log_all_users_joins as j
        on
            s.subject = 'group_membership'
            and s.detail = 'added to group'
            and s.site_luid = j.site_luid
            and s.group_luid = j.group_luid
            and s.user_luid = j.user_luid
            and j.event_time > s.changed_after - interval 1 hour
            and j.event_time <= s.changed_by + interval 1 hour
),

activity_log_only as (
    select
        e.subject,
        e.site_luid,
        e.user_luid,
        e.group_luid,
        e.content_type,
        e.content_luid,
        e.match_key,
        e.detail,
        e.event_time as changed_after,
        e.event_time as changed_by,
        'activity_log_only' as seen_in,
        e.event_id,
        e.event_type
    from log_judged as e
    left anti join snapshot_changes as s
        on
            e.subject = s.subject
            and e.site_luid = s.site_luid
            and e.match_key = s.match_key
            and (e.first_hour = s.changed_by or e.second_hour = s.changed_by)
),

found as (
    {{ union_by_name(['snapshots_only', 'activity_log_only'], [
        'subject', 'site_luid', 'user_luid', 'group_luid', 'content_type', 'content_luid', 'match_key', 'detail',
        'changed_after', 'changed_by', 'seen_in', 'event_id', 'event_type'
    ]) }}
)

select
    {{ hash_key([
        'subject', 'seen_in', 'site_luid', 'match_key', 'cast(changed_by as string)', "coalesce(event_id, '')"
    ]) }} as discrepancy_id,
    subject,
    seen_in,
    site_luid,
    user_luid,
    group_luid,
    content_type,
    content_luid,
    detail,
    changed_after,
    changed_by,
    event_id,
    event_type
from found
