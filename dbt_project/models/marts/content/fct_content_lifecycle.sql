{{ config(materialized='incremental', incremental_strategy='append', unique_key='event_id',
          on_schema_change='append_new_columns') }}

with lifecycle_events as (
    {{ mart_events('site', [
        ['event_id', 'string'], ['event_type', 'string'], ['event_time', 'timestamp'],
        ['site_luid', 'string'], ['actor_user_luid', 'string'], ['content_type', 'string'],
        ['content_luid', 'string'], ['content_name', 'string'], ['former_name', 'string'],
        ['source_project_luid', 'string'], ['destination_project_luid', 'string'],
        ['old_container_luid', 'string'], ['new_container_luid', 'string'], ['project_luid', 'string'],
        ['owner_luid', 'string'], ['size', 'bigint'], ['silver_ingest_ts', 'timestamp']
    ]) }}
)

select
    event_id,
    event_type,
    event_time,
    site_luid,
    actor_user_luid,
    -- hist_<action>_<content>; move_content is the newer move event
    case when event_type = 'move_content' then 'move' else split(event_type, '_')[1] end as action,
    lower(content_type) as content_type,
    content_luid,
    content_name,
    former_name,
    coalesce(source_project_luid, old_container_luid) as from_container_luid,
    coalesce(destination_project_luid, new_container_luid) as to_container_luid,
    project_luid,
    owner_luid,
    -- bytes as published: past 2^31 for a large extract, hence 64 bits
    size,
    silver_ingest_ts
from lifecycle_events
{{ newer_than_mart() }}
