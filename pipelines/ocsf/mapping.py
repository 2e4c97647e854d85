"""Gold mart rows -> OCSF events (DataFrames in, DataFrames out; no I/O).

``CLASSES`` is the whole mapping: per OCSF class, the marts it reads, which of their rows, and the
function that maps them. A mapping returns the class's own attributes (``activity_id``, ``user``,
``actor``, ...) plus the event's ``event_id``, ``event_type``, ``event_time``, ``log_name`` and
``tenant_uid``; ``to_ocsf`` adds what every class has (``metadata``, ``time``, the ids and their
captions) and drops the helpers but ``event_time`` (the export's ``eventDay``). OCSF objects are
Spark structs, so the Parquet schema nests as OCSF does; an object with nothing in it is NULL,
never an empty struct (OCSF wants at least one identifying attribute in most objects). Values the
class has no attribute for go to ``unmapped`` (map<string,string>, NULLs left out).
docs/ocsf.md has the mapping as a table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

PRODUCT_NAME = "Tableau"
VENDOR_NAME = "Salesforce"
LOG_PROVIDER = "Tableau Activity Log"
IAM = (3, "Identity & Access Management")
APPLICATION = (6, "Application Activity")
SEVERITY_INFORMATIONAL = (1, "Informational")
STATUSES = {1: "Success", 2: "Failure"}
# OCSF profiles the events use: `actor` belongs to the host profile in several classes
PROFILES = ("host",)
OTHER = 99


@dataclass(frozen=True)
class Source:
    """The rows of one gold mart a class maps (``rows``: a Spark SQL condition, None = all)."""

    mart: str
    mapping: Callable[[DataFrame], DataFrame]
    rows: str | None = None


@dataclass(frozen=True)
class OcsfClass:
    uid: int
    name: str
    category: tuple[int, str]
    activities: dict[int, str]  # the activity ids the mappings use -> OCSF's caption
    sources: tuple[Source, ...]


# --- OCSF objects as structs ------------------------------------------------------------------


def _text(value: Column | str | None) -> Column:
    if value is None:
        return F.lit(None).cast("string")
    return (F.col(value) if isinstance(value, str) else value).cast("string")


def _any(*columns: Column) -> Column:
    """Whether any of ``columns`` is not NULL."""
    present = columns[0].isNotNull()
    for c in columns[1:]:
        present = present | c.isNotNull()
    return present


def user(uid: Column | str | None, name: Column | str | None = None, email: Column | str | None = None) -> Column:
    """OCSF ``user``; NULL when neither uid nor name is known."""
    uid, name, email = _text(uid), _text(name), _text(email)
    return F.when(_any(uid, name), F.struct(uid.alias("uid"), name.alias("name"), email.alias("email_addr")))


def actor(acting_user: Column, session_uid: Column | str | None = None) -> Column:
    """OCSF ``actor``: the user who did it (and their session); NULL when neither is known."""
    session = _session(session_uid)
    return F.when(_any(acting_user, session), F.struct(acting_user.alias("user"), session.alias("session")))


def _session(uid: Column | str | None) -> Column:
    uid = _text(uid)
    return F.when(uid.isNotNull(), F.struct(uid.alias("uid")))


def src_endpoint(ip: Column | str | None) -> Column:
    ip = _text(ip)
    return F.when(ip.isNotNull(), F.struct(ip.alias("ip")))


def http_request(user_agent: Column | str | None) -> Column:
    user_agent = _text(user_agent)
    return F.when(user_agent.isNotNull(), F.struct(user_agent.alias("user_agent")))


def resource(uid: Column | str | None, name: Column | str | None, kind: Column | str | None) -> Column:
    """OCSF ``resource_details`` (also the shape of a ``web_resource``)."""
    uid, name = _text(uid), _text(name)
    return F.when(_any(uid, name), F.struct(uid.alias("uid"), name.alias("name"), _text(kind).alias("type")))


def group(uid: Column | str | None, name: Column | str | None) -> Column:
    uid, name = _text(uid), _text(name)
    return F.when(_any(uid, name), F.struct(uid.alias("uid"), name.alias("name")))


def unmapped(**values: Column | str) -> Column:
    """``unmapped``: the values OCSF has no attribute for, as text; NULL values left out."""
    pairs = [part for key, value in values.items() for part in (F.lit(key), _text(value))]
    return F.map_filter(F.create_map(*pairs), lambda _k, v: v.isNotNull())


def status_id(success: Column) -> Column:
    """1 Success, 2 Failure, NULL when the mart does not say."""
    return F.when(success, 1).when(~success, 2).cast("int")


def _event(log_name: Column, tenant_uid: Column | str | None = None) -> list[Column]:
    """The columns ``to_ocsf`` turns into ``metadata`` and ``time``; ``log_name``: the Activity Log
    family (site or tenant)."""
    return [
        F.col("event_id"),
        F.col("event_type"),
        F.col("event_time"),
        log_name.alias("log_name"),
        _text(tenant_uid).alias("tenant_uid"),
    ]


def _lookup(mapping: dict, key: Column) -> Column:
    """``mapping[key]``, NULL for a key it lacks."""
    return F.try_element_at(F.create_map(*[F.lit(v) for item in mapping.items() for v in item]), key)


def _activity(*cases: tuple[Column, int], otherwise: int = OTHER) -> Column:
    out = None
    for condition, activity in cases:
        out = F.when(condition, activity) if out is None else out.when(condition, activity)
    return (out.otherwise(otherwise) if out is not None else F.lit(otherwise)).cast("int").alias("activity_id")


# --- one mapping per (class, mart) -------------------------------------------------------------


def authentication_from_logins(logins: DataFrame) -> DataFrame:
    method = F.col("login_method")
    return logins.select(
        *_event(F.col("family")),
        _activity(otherwise=1),  # every row is a sign-in attempt: Logon
        status_id(F.col("outcome") == "success").alias("status_id"),
        F.col("outcome_reason").alias("status_detail"),
        user(F.coalesce("user_luid", "tenant_user_id"), email="user_email").alias("user"),
        F.when(method == "saml", 5)
        .when(method == "oidc", 4)
        .when(method.isin("pat", "password"), OTHER)
        .otherwise(0)
        .cast("int")
        .alias("auth_protocol_id"),
        F.when(method == "saml", "SAML")
        .when(method == "oidc", "OpenID")
        .when(method == "pat", "Personal access token")
        .when(method == "password", "Password")
        .alias("auth_protocol"),
        src_endpoint("ip_address").alias("src_endpoint"),
        http_request("user_agent").alias("http_request"),
        _session("session_id").alias("session"),
        # what was signed in to (OCSF wants a service or a destination): the site, or Cloud Manager
        F.struct(
            F.when(F.col("family") == "tenant", "Tableau Cloud Manager").otherwise("Tableau Cloud site").alias("name"),
            _text("site_luid").alias("uid"),
        ).alias("service"),
        unmapped(login_method="login_method", token_name="token_name").alias("unmapped"),
    )


def _subject() -> Column:
    return user(F.coalesce("user_luid", "tenant_user_id"), "user_name", "user_email")


def _lifecycle_actor() -> Column:
    return actor(user(F.coalesce("actor_user_luid", "actor_tenant_user_id")))


def account_change_from_lifecycle(lifecycle: DataFrame) -> DataFrame:
    action = F.col("action")
    return lifecycle.select(
        *_event(F.col("family")),
        _activity((action == "created", 1), (action == "deleted", 6)),
        _subject().alias("user"),
        _lifecycle_actor().alias("actor"),
        unmapped(site_luid="site_luid", site_role="new_role").alias("unmapped"),
    )


def user_access_from_role_changes(lifecycle: DataFrame) -> DataFrame:
    """A new role is a privilege assigned; a change whose new role the log does not state
    (hist_update_user_site_role of a user who is not a site administrator) is Other."""
    return lifecycle.select(
        *_event(F.col("family")),
        _activity((F.col("new_role").isNotNull(), 1)),
        F.when(F.col("new_role").isNotNull(), F.array("new_role"))
        .otherwise(F.array().cast("array<string>"))
        .alias("privileges"),
        _subject().alias("user"),
        _lifecycle_actor().alias("actor"),
        unmapped(site_luid="site_luid", change="action", old_role="old_role").alias("unmapped"),
    )


def _permission_columns() -> list[Column]:
    """What a permission change says beyond its grantee: the rule (``Read:allow``) as the privilege,
    assigned by a set, revoked by a delete; a template change is Other."""
    kind = F.col("change_kind")
    mode = F.try_element_at(F.split(F.coalesce("new_value", "old_value"), " "), F.lit(-1))
    return [
        *_event(F.lit("site")),
        _activity((kind == "set", 1), (kind.isin("delete", "delete_grantee"), 2)),
        F.when(F.col("capability").isNotNull(), F.array(F.concat_ws(":", "capability", mode)))
        .otherwise(F.array().cast("array<string>"))
        .alias("privileges"),
        status_id(~F.col("is_error")).alias("status_id"),
        resource("content_luid", "content_name", "content_type").alias("resource"),
        actor(user("actor_user_luid")).alias("actor"),
        unmapped(
            site_luid="site_luid",
            change_kind="change_kind",
            initiating_user_luid="initiating_user_luid",
            content_id="content_id",
            capability_id="capability_id",
            permission_type="permission_type",
            template_type="template_type",
            is_deprecated_event="is_deprecated_event",
        ).alias("unmapped"),
    ]


def user_access_from_permissions(changes: DataFrame) -> DataFrame:
    return changes.select(*_permission_columns(), user("grantee_luid").alias("user"))


def group_privileges_from_permissions(changes: DataFrame) -> DataFrame:
    return changes.select(*_permission_columns(), group("grantee_luid", None).alias("group"))


def group_management_from_memberships(memberships: DataFrame) -> DataFrame:
    change = F.col("change")
    return memberships.select(
        *_event(F.lit("site")),
        _activity((change == "added", 3), (change == "removed", 4)),
        group("group_luid", "group_name").alias("group"),
        user("user_luid", "user_name").alias("user"),
        actor(user("actor_user_luid")).alias("actor"),
        unmapped(site_luid="site_luid").alias("unmapped"),
    )


# fct_tenant_security_changes.change_kind -> (activity, the entity's type)
ENTITY_CHANGES = {
    "saml_config_changed": (3, "SAML configuration"),  # create_or_update: the log does not say which
    "saml_config_deleted": (4, "SAML configuration"),
    "oidc_config_changed": (3, "OIDC configuration"),
    "oidc_config_deleted": (4, "OIDC configuration"),
    "pat_created": (1, "Personal access token"),
    "pat_updated": (3, "Personal access token"),
    "pat_revoked": (4, "Personal access token"),  # a revoked token is gone: Delete
    "user_pats_revoked": (4, "Personal access token"),  # every token of entity.user
    "session_revoked": (4, "Session"),
    "user_sessions_revoked": (4, "Session"),  # every session of entity.user
}


def entity_management_from_tenant_security(changes: DataFrame) -> DataFrame:
    kind = F.col("change_kind")
    activity = _lookup({k: a for k, (a, _) in ENTITY_CHANGES.items()}, kind)
    entity_type = _lookup({k: t for k, (_, t) in ENTITY_CHANGES.items()}, kind)
    uid = F.coalesce("token_id", "idp_resource_id")
    name = F.coalesce("token_name", "idp_configuration_name")
    owner = user("subject_tenant_user_id", email="subject_email")
    # revoke_session names no session: the entity is then known only by its type
    name = F.when(_any(uid, name, owner), name).otherwise(entity_type)
    entity = F.struct(
        uid.alias("uid"),
        name.alias("name"),
        entity_type.alias("type"),
        F.lit(OTHER).cast("int").alias("type_id"),
        owner.alias("user"),
    )
    return changes.select(
        *_event(F.lit("tenant"), "tenant_id"),
        F.coalesce(activity, F.lit(OTHER)).cast("int").alias("activity_id"),
        status_id(F.col("outcome") == "success").alias("status_id"),
        entity.alias("entity"),
        actor(user("actor_tenant_user_id", email="actor_email")).alias("actor"),
        src_endpoint("actor_ip_address").alias("src_endpoint"),
        unmapped(
            site_luid="site_luid",
            change_kind="change_kind",
            is_secret_updated="is_secret_updated",
            old_settings_value="old_settings_value",
            new_settings_value="new_settings_value",
            token_expires_at="token_expires_at",
        ).alias("unmapped"),
    )


def web_resources_from_content_access(access: DataFrame) -> DataFrame:
    kind = F.col("access_kind")
    return access.select(
        *_event(F.lit("site")),
        _activity((kind.isin("view", "view_request"), 2), (kind.isin("download", "export"), 7)),
        F.array(resource("content_luid", "content_name", "content_type")).alias("web_resources"),
        actor(user("actor_user_luid"), "session_id").alias("actor"),
        src_endpoint("ip_address").alias("src_endpoint"),
        http_request("user_agent").alias("http_request"),
        unmapped(
            site_luid="site_luid",
            access_kind="access_kind",
            initiating_user_luid="initiating_user_luid",
            workbook_luid="workbook_luid",
            project_luid="project_luid",
        ).alias("unmapped"),
    )


# Rows whose user is not identified cannot make an event of a class that requires ``user``.
_USER_KNOWN = "coalesce(user_luid, tenant_user_id) IS NOT NULL"
# update_user_site_role and update_user_tenant_role are in fct_user_lifecycle too: exported once, as 3005
_ROLE_CHANGES = "('site_role_changed', 'tenant_role_changed')"

CLASSES: tuple[OcsfClass, ...] = (
    OcsfClass(
        3001,
        "Account Change",
        IAM,
        {1: "Create", 6: "Delete", OTHER: "Other"},
        (
            Source(
                "fct_user_lifecycle",
                account_change_from_lifecycle,
                f"action IN ('created', 'deleted') AND {_USER_KNOWN}",
            ),
        ),
    ),
    OcsfClass(
        3002, "Authentication", IAM, {1: "Logon"}, (Source("fct_logins", authentication_from_logins, _USER_KNOWN),)
    ),
    OcsfClass(
        3004,
        "Entity Management",
        IAM,
        {1: "Create", 3: "Update", 4: "Delete", OTHER: "Other"},
        (
            Source(
                "fct_tenant_security_changes",
                entity_management_from_tenant_security,
                f"change_kind NOT IN {_ROLE_CHANGES}",
            ),
        ),
    ),
    OcsfClass(
        3005,
        "User Access Management",
        IAM,
        {1: "Assign Privileges", 2: "Revoke Privileges", OTHER: "Other"},
        (
            Source("fct_user_lifecycle", user_access_from_role_changes, f"action IN {_ROLE_CHANGES} AND {_USER_KNOWN}"),
            Source("fct_permission_changes", user_access_from_permissions, "grantee_type = 'user'"),
        ),
    ),
    OcsfClass(
        3006,
        "Group Management",
        IAM,
        {1: "Assign Privileges", 2: "Revoke Privileges", 3: "Add User", 4: "Remove User", OTHER: "Other"},
        (
            # a group joining a group set adds no user: the class's Add User / Remove User would misname it
            Source(
                "fct_group_membership_changes",
                group_management_from_memberships,
                "membership_of IS DISTINCT FROM 'group_set'",
            ),
            Source("fct_permission_changes", group_privileges_from_permissions, "grantee_type = 'group'"),
        ),
    ),
    OcsfClass(
        6001,
        "Web Resources Activity",
        APPLICATION,
        {2: "Read", 7: "Export", OTHER: "Other"},
        (Source("fct_content_access", web_resources_from_content_access),),
    ),
)


def to_ocsf(mapped: DataFrame, cls: OcsfClass, version: str) -> DataFrame:
    """A mapping's rows as ``cls`` events: the attributes every class has, then the class's own;
    ``event_time`` kept for the export's partitioning."""
    activity_name = _lookup(cls.activities, F.col("activity_id"))
    metadata = F.struct(
        F.col("event_id").alias("uid"),
        F.col("event_type").alias("event_code"),
        F.col("log_name"),
        F.lit(LOG_PROVIDER).alias("log_provider"),
        F.date_format("event_time", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'").alias("original_time"),
        F.struct(F.lit(PRODUCT_NAME).alias("name"), F.lit(VENDOR_NAME).alias("vendor_name")).alias("product"),
        F.col("tenant_uid"),
        F.array(*[F.lit(p) for p in PROFILES]).alias("profiles"),
        F.lit(version).alias("version"),
    )
    common = [
        F.unix_millis("event_time").alias("time"),
        F.lit(cls.category[0]).cast("int").alias("category_uid"),
        F.lit(cls.category[1]).alias("category_name"),
        F.lit(cls.uid).cast("int").alias("class_uid"),
        F.lit(cls.name).alias("class_name"),
        F.col("activity_id"),
        activity_name.alias("activity_name"),
        (F.lit(cls.uid).cast("long") * 100 + F.col("activity_id")).alias("type_uid"),
        F.concat_ws(": ", F.lit(cls.name), activity_name).alias("type_name"),
        F.lit(SEVERITY_INFORMATIONAL[0]).cast("int").alias("severity_id"),
        F.lit(SEVERITY_INFORMATIONAL[1]).alias("severity"),
        metadata.alias("metadata"),
    ]
    if "status_id" in mapped.columns:
        common += [F.col("status_id"), _lookup(STATUSES, F.col("status_id")).alias("status")]
    helpers = {"event_id", "event_type", "event_time", "log_name", "tenant_uid", "activity_id", "status_id"}
    own = [F.col(c) for c in mapped.columns if c not in helpers]
    return mapped.select(*common, *own, F.col("event_time"))
