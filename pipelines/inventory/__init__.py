"""``auditlake inventory``: each configured site's current state read from Tableau's REST API
(``tableauserverclient``, a personal access token from the environment) and written to the landing tree
as entity snapshots: one Parquet file per site, hour and entity type, in the layout Tableau Cloud
Manager delivers its own (``siteLuid=<luid>/y=/m=/d=/h=/entityType=<type>/inventory-….parquet``).
Bronze and silver keep them as they keep Tableau's (``pipelines/entity_snapshots``): one type-2 history
per entity type, whichever source delivered the state; for a site, type and hour that both deliver,
silver takes Tableau's file.

- ``fetch``: the REST calls, page by page, and the rows they give (no file written).
- ``files``: the rows as Parquet in the landing tree, each file whole or not at all.
- ``run``: one inventory of every site; ``inventory.on_refresh``'s run before a refresh.

``SCHEMAS`` are the files' columns: the types the sample generator's snapshots also have (users,
groups, group_members, workbooks, datasources) keep its column names and types, so gold reads either
source alike; the other types are this source's own, snake_case. Passwords are never read: a data
connection says only whether its credentials are embedded.
"""

from __future__ import annotations

import pyarrow as pa

_TS = pa.timestamp("us", tz="UTC")
_TAGS = pa.list_(pa.string())
_CONTENT = [
    ("luid", pa.string()),
    ("id", pa.int64()),  # the repository id: the REST API does not give it (always empty here)
    ("name", pa.string()),
    ("project_luid", pa.string()),
    ("owner_luid", pa.string()),
    ("size", pa.int64()),
    ("created_at", _TS),
    ("updated_at", _TS),
]
SCHEMAS: dict[str, pa.Schema] = {
    "users": pa.schema(
        [
            ("luid", pa.string()),
            ("id", pa.int64()),
            ("name", pa.string()),  # the sign-in name
            ("display_name", pa.string()),
            ("email", pa.string()),
            ("site_role", pa.string()),  # the REST API's name (SiteAdministratorCreator, Viewer, ...)
            ("is_system_admin", pa.bool_()),
            ("created_at", _TS),
            ("auth_setting", pa.string()),
            ("last_login", _TS),
            ("domain_name", pa.string()),
            ("locale", pa.string()),
            ("language", pa.string()),
        ]
    ),
    "groups": pa.schema(
        [
            ("luid", pa.string()),
            ("id", pa.int64()),
            ("name", pa.string()),
            ("domain_name", pa.string()),
            ("minimum_site_role", pa.string()),
            ("license_mode", pa.string()),
        ]
    ),
    "group_members": pa.schema([("group_luid", pa.string()), ("user_luid", pa.string())]),
    "group_sets": pa.schema([("luid", pa.string()), ("name", pa.string())]),
    "group_set_members": pa.schema([("group_set_luid", pa.string()), ("group_luid", pa.string())]),
    "projects": pa.schema(
        [
            ("luid", pa.string()),
            ("name", pa.string()),
            ("description", pa.string()),
            ("parent_project_luid", pa.string()),
            ("owner_luid", pa.string()),
            ("content_permissions", pa.string()),  # LockedToProject, ManagedByOwner, LockedToProjectWithoutNested
        ]
    ),
    "workbooks": pa.schema(
        [
            *_CONTENT,
            ("content_url", pa.string()),
            ("show_tabs", pa.bool_()),
            ("has_extracts", pa.bool_()),
            ("tags", _TAGS),
        ]
    ),
    "views": pa.schema(
        [
            ("luid", pa.string()),
            ("name", pa.string()),
            ("workbook_luid", pa.string()),
            ("project_luid", pa.string()),
            ("owner_luid", pa.string()),
            ("content_url", pa.string()),
            ("sheet_type", pa.string()),
            ("created_at", _TS),
            ("updated_at", _TS),
            ("tags", _TAGS),
        ]
    ),
    "datasources": pa.schema(
        [
            *_CONTENT,
            ("content_url", pa.string()),
            ("datasource_type", pa.string()),
            ("is_certified", pa.bool_()),
            ("certification_note", pa.string()),
            ("has_extracts", pa.bool_()),
            ("tags", _TAGS),
        ]
    ),
    "flows": pa.schema(
        [
            ("luid", pa.string()),
            ("name", pa.string()),
            ("project_luid", pa.string()),
            ("owner_luid", pa.string()),
            ("created_at", _TS),
            ("updated_at", _TS),
            ("tags", _TAGS),
        ]
    ),
    "data_connections": pa.schema(
        [
            ("luid", pa.string()),
            ("item_type", pa.string()),  # workbook | datasource | flow
            ("item_luid", pa.string()),
            ("connection_type", pa.string()),
            ("server_address", pa.string()),
            ("server_port", pa.string()),
            ("user_name", pa.string()),  # the database account, never its password
            ("embed_password", pa.bool_()),
            ("auth_type", pa.string()),
            ("datasource_luid", pa.string()),  # a workbook's connection to a published data source
        ]
    ),
    "permissions": pa.schema(
        [
            ("item_type", pa.string()),  # project | workbook | view | datasource | flow
            ("item_luid", pa.string()),
            ("grantee_type", pa.string()),  # user | group | group_set
            ("grantee_luid", pa.string()),
            ("capability", pa.string()),
            ("mode", pa.string()),  # Allow | Deny
        ]
    ),
    "default_permissions": pa.schema(
        [
            ("project_luid", pa.string()),
            ("content_type", pa.string()),  # workbook | datasource | flow
            ("grantee_type", pa.string()),
            ("grantee_luid", pa.string()),
            ("capability", pa.string()),
            ("mode", pa.string()),
        ]
    ),
}
ENTITY_TYPES = tuple(SCHEMAS)
