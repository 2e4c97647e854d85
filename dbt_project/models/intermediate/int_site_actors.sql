{{ config(materialized='incremental', incremental_strategy='merge', unique_key='actor_key') }}
-- depends_on: {{ ref('stg_site__events') }}

-- Every (site, user) pair that acted in a site event: dim_users gives the ones with no stated role
-- (legacy-edition events) a version of their own. A table merged with each delivery's new actors
-- (a distinct over all of history on every build grew with the years). actor_key is plain text,
-- not a hash: erase replaces a LUID inside it, so it still matches the pseudonymised rows.
select
    concat_ws('|', coalesce(site_luid, ''), actor_user_luid) as actor_key,
    site_luid,
    actor_user_luid as user_luid,
    max(silver_ingest_ts) as silver_ingest_ts
from {{ ref('stg_site__events') }}
{{ newer_than_mart() }}
group by site_luid, actor_user_luid
having actor_user_luid is not null
