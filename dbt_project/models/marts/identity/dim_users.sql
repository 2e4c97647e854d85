-- Site users with their site-role history as a type-2 dimension: one row per (site, user,
-- version). Users seen only in legacy-edition events (no role stated) get one version with no
-- role, so every actor of a fact has a row here.
with role_versions as (
    select
        {{ user_version_key('site_luid', 'user_luid', 'version_number') }} as user_version_key,
        site_luid,
        user_luid,
        version_number,
        site_role_id,
        site_role,
        is_system_admin,
        valid_from,
        valid_to,
        previous_site_role,
        was_system_admin
    from {{ ref('int_site_user_role_versions') }}
),

actors as (
    select
        site_luid,
        user_luid
    from {{ ref('int_site_actors') }}
),

unversioned as (
    select
        {{ user_version_key('a.site_luid', 'a.user_luid', '0') }} as user_version_key,
        a.site_luid,
        a.user_luid,
        0 as version_number,
        cast(null as bigint) as site_role_id,
        cast(null as string) as site_role,
        cast(null as boolean) as is_system_admin,
        cast(null as timestamp) as valid_from,
        cast(null as timestamp) as valid_to,
        cast(null as string) as previous_site_role,
        cast(null as boolean) as was_system_admin
    from actors as a
    left anti join role_versions as v
        on a.site_luid = v.site_luid and a.user_luid = v.user_luid
),

-- the newest name and e-mail address the user lifecycle events give for a user
identities as (
    select
        user_luid,
        user_name,
        user_email
    from {{ ref('int_user_identities') }}
),

all_versions as (
    {{ union_by_name(['role_versions', 'unversioned'], [
        'user_version_key', 'site_luid', 'user_luid', 'version_number', 'site_role_id', 'site_role',
        'is_system_admin', 'valid_from', 'valid_to', 'previous_site_role', 'was_system_admin'
    ]) }}
)

select
    v.user_version_key,
    v.site_luid,
    v.user_luid,
    v.version_number,
    v.site_role_id,
    v.site_role,
    v.is_system_admin,
    v.valid_from,
    v.valid_to,
    v.valid_to is null as is_current,
    v.previous_site_role,
    v.was_system_admin,
    i.user_name,
    i.user_email
from all_versions as v
left join identities as i on v.user_luid = i.user_luid
