-- Every group the events mention, with its newest name: int_group_mentions, which merges each
-- delivery's new group events and membership changes into what it held.
select
    group_luid,
    site_luid,
    group_name,
    group_domain,
    first_seen_at,
    last_seen_at,
    deleted_at
from {{ ref('int_group_mentions') }}
