-- Data connections of workbooks, data sources and flows that hold the database password
-- (embed_password), as the entity histories hold them now: whoever can open or refresh the item
-- uses the account named here. The password itself is never read.
with connections as (
    select
        lower(site_luid) as site_luid,
        lower(luid) as connection_luid,
        lower(item_type) as item_type,
        lower(item_luid) as item_luid,
        connection_type,
        server_address,
        server_port,
        user_name as database_user,
        auth_type
    from ({{ snapshot_history('data_connections', [
        ['luid', 'string'], ['item_type', 'string'], ['item_luid', 'string'], ['connection_type', 'string'],
        ['server_address', 'string'], ['server_port', 'string'], ['user_name', 'string'],
        ['embed_password', 'boolean'], ['auth_type', 'string']
    ]) }}) as c
    where valid_to is null and embed_password
),

items as (
    select
        site_luid,
        content_type as item_type,
        content_luid as item_luid,
        content_name as item_name,
        project_luid,
        owner_luid
    from ({{ current_content() }}) as c
)

select
    {{ hash_key(["'embedded_credentials'", 'c.site_luid', 'c.item_type', 'c.item_luid', 'c.connection_luid']) }}
        as embedded_credentials_id,
    c.site_luid,
    c.item_type,
    c.item_luid,
    i.item_name,
    i.project_luid,
    i.owner_luid,
    c.connection_luid,
    c.connection_type,
    c.server_address,
    c.server_port,
    c.database_user,
    c.auth_type
from connections as c
left join items as i on c.site_luid = i.site_luid and c.item_type = i.item_type and c.item_luid = i.item_luid
