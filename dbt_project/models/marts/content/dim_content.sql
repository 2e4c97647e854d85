-- Every piece of content the events mention, with its latest name, type and owner: the mentioned
-- rows of int_content_mentions, which merges each delivery's new fact rows into what it held.
select
    content_luid,
    site_luid,
    content_type,
    content_name,
    current_owner_luid,
    first_seen_at,
    last_seen_at,
    last_published_at,
    deleted_at
from {{ ref('int_content_mentions') }}
where is_mentioned
