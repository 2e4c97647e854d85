"""Hourly entity snapshots beside the Activity Log, as Tableau Cloud Manager delivers them.

Each snapshot is one site's complete state of one entity type at the top of an hour, one
Parquet file per (site, hour, entity type) under ``entityType=<type>`` where the Activity Log
has ``eventType=`` (``writer.entity_dir``). The state is read from the world the stories
mutate, so a snapshot agrees with the log written before it: taken at H:00, after every story
of the hours before H has run.

No public document lists the columns of these files; ours are the leading columns of the
same types in ``auditlake inventory``'s files (``pipelines.inventory.SCHEMAS``), and gold relies
on them. From the window's second half on, ``users`` carries one more column, ``locale``: a
schema change as Tableau might make one, so readers cannot assume one schema per entity.

Nothing here draws from the generator's random stream: the Activity Log is the same bytes with
snapshots on or off. ``dirty`` adds, from its own stream, one poison file (``part-00001.parquet``
that is not Parquet) and one silent change: a user's site role changed in the snapshots with no
Activity Log event, as when a change reaches Tableau by a path that does not audit it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.inventory import SCHEMAS as INVENTORY_SCHEMAS

from .values import HOUR_US, SITE_ROLE_NAMES, iso
from .writer import entity_dir

ENTITY_TYPES = ("users", "groups", "group_members", "workbooks", "datasources")
SNAPSHOT_DIRTY_KINDS = ("poison_snapshot",)


def _through(entity: str, last: str) -> pa.Schema:
    """Inventory's ``entity`` columns up to ``last``: the ones the generated world has values for.
    Taken from inventory's declaration so that gold reads both sources alike."""
    schema = INVENTORY_SCHEMAS[entity]
    return pa.schema(list(schema)[: schema.get_field_index(last) + 1])


SCHEMAS = {
    "users": _through("users", "created_at"),
    "groups": _through("groups", "domain_name"),
    "group_members": INVENTORY_SCHEMAS["group_members"],
    "workbooks": _through("workbooks", "updated_at"),
    "datasources": _through("datasources", "updated_at"),
}
LOCALE = INVENTORY_SCHEMAS["users"].field("locale")  # users, from the window's second half on
SILENT_FROM = (3, 9)  # Explorer, Viewer: the users a silent change may touch
SILENT_TO = 10  # Creator: a licence upgrade the log never mentions


def snapshot_hours(hours: int, every: int) -> list[int]:
    """Hour offsets of the snapshots in a window of ``hours``: its start, then every ``every``
    hours up to and including its end."""
    if every < 1:
        raise ValueError("snapshot_every must be >= 1")
    return list(range(0, hours + 1, every))


def entity_rows(site, entity: str, roles: dict[str, int] | None = None) -> list[dict]:
    """The rows of ``site``'s ``entity`` snapshot as the world stands, in a stable order.

    ``roles`` (user LUID -> site role id) overrides the world's role: a silent change. Members of
    a group who have left the site are not members any more (the stories leave them in the lists).
    """
    roles = roles or {}
    if entity == "users":
        return sorted(
            (
                {
                    "luid": u.luid,
                    "id": u.id,
                    "name": u.name,
                    "display_name": u.display,
                    "email": u.email,
                    "site_role": SITE_ROLE_NAMES[roles.get(u.luid, u.site_role_id)],
                    "is_system_admin": u.system_admin_level > 0,
                    "created_at": u.created_us,
                    "locale": u.locale,
                }
                for u in site.users
            ),
            key=lambda r: r["luid"],
        )
    if entity == "groups":
        return sorted(
            ({"luid": g.luid, "id": g.id, "name": g.name, "domain_name": g.domain} for g in site.groups),
            key=lambda r: r["luid"],
        )
    if entity == "group_members":
        on_site = {u.luid for u in site.users}
        pairs = {(g.luid, u.luid) for g in site.groups for u in g.members if u.luid in on_site}
        return [{"group_luid": g, "user_luid": u} for g, u in sorted(pairs)]
    if entity in ("workbooks", "datasources"):
        return sorted(
            (
                {
                    "luid": c.luid,
                    "id": c.id,
                    "name": c.name,
                    "project_luid": c.project.luid,
                    "owner_luid": c.owner.luid,
                    "size": c.size,
                    "created_at": c.created_us,
                    "updated_at": c.updated_us,
                }
                for c in site.content[entity[:-1]]
            ),
            key=lambda r: r["luid"],
        )
    raise ValueError(f"unknown entity type {entity!r}; one of {', '.join(ENTITY_TYPES)}")


def parquet_bytes(rows: list[dict], schema: pa.Schema) -> bytes:
    """One Parquet file's bytes: the same rows give the same bytes (no write time is recorded)."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink, compression="snappy")
    return sink.getvalue().to_pybytes()


class SnapshotWriter:
    """Writes every site's entity snapshots at the hours of :func:`snapshot_hours`.

    The generator calls :meth:`take` at the top of each hour, before that hour's stories, and
    once after the last hour. With ``dirty``, the poison file and the silent change are drawn
    from a stream of their own, seeded from ``seed``.
    """

    def __init__(
        self, out_dir: Path, layout: str, world, seed: int, start_us: int, hours: int, every: int, dirty: bool
    ) -> None:
        self.out, self.layout, self.world = Path(out_dir), layout, world
        self.start_hour, self.hours = start_us // HOUR_US, hours
        self.at = snapshot_hours(hours, every)
        self._at = set(self.at)
        self.files = self.rows = 0
        self.by_entity = {e: 0 for e in ENTITY_TYPES}
        self.poisoned = 0
        self.silent_changes: list[dict] = []
        self._silent: dict[tuple[str, str], tuple[int, int]] = {}  # (site, user) -> (old role, new role)
        self.rng = random.Random(f"snapshots-{seed}")  # never the generator's: the log stays the same
        self._poison = self._silent_at = None
        if dirty:
            late = [h for h in self.at if 2 * h >= hours]
            self._silent_at = self.rng.choice(late[:-1] or late)  # seen in more than one snapshot if it can be
            self._poison = (
                self.rng.choice(self.at),
                self.rng.randrange(len(world.sites)),
                self.rng.choice(ENTITY_TYPES),
            )

    def take(self, hi: int) -> None:
        """Write the snapshots of hour offset ``hi`` if it is a snapshot hour."""
        if hi not in self._at:
            return
        if hi == self._silent_at:
            self._change_silently(hi)
        abs_hour = self.start_hour + hi
        for si, site in enumerate(self.world.sites):
            roles = self._roles(site)
            for entity in ENTITY_TYPES:
                rows = entity_rows(site, entity, roles)
                schema = SCHEMAS[entity]
                if entity == "users" and 2 * hi >= self.hours:
                    schema = schema.append(LOCALE)
                folder = self.out / entity_dir(self.layout, site.luid, abs_hour, entity)
                folder.mkdir(parents=True, exist_ok=True)
                data = parquet_bytes(rows, schema)
                (folder / "part-00000.parquet").write_bytes(data)
                self.files += 1
                self.rows += len(rows)
                self.by_entity[entity] += len(rows)
                if self._poison == (hi, si, entity):
                    (folder / "part-00001.parquet").write_bytes(data[: len(data) // 2])  # cut short: no footer
                    self.poisoned += 1

    def _change_silently(self, hi: int) -> None:
        """Change one Explorer's or Viewer's site role in the snapshots only, from hour ``hi`` on.

        The world keeps the old role: every later record states its actor's role, so changing the
        world would change the log, whose clean records must be those of a run without dirt.
        """
        for site in self.rng.sample(self.world.sites, len(self.world.sites)):
            users = [u for u in site.users if u.site_role_id in SILENT_FROM and not u.system_admin_level]
            if users:
                user = self.rng.choice(users)
                self._silent[(site.luid, user.luid)] = (user.site_role_id, SILENT_TO)
                self.silent_changes.append(
                    {
                        "site_luid": site.luid,
                        "user_luid": user.luid,
                        "old_role": SITE_ROLE_NAMES[user.site_role_id],
                        "new_role": SITE_ROLE_NAMES[SILENT_TO],
                        "hour": iso((self.start_hour + hi) * HOUR_US, 1),
                    }
                )
                return

    def _roles(self, site) -> dict[str, int]:
        """The silent roles still in force on ``site``: a logged change of the user's role since ends one."""
        roles = {}
        for u in site.users:
            change = self._silent.get((site.luid, u.luid))
            if change is not None:
                if u.site_role_id == change[0]:
                    roles[u.luid] = change[1]
                else:
                    del self._silent[(site.luid, u.luid)]
        return roles

    def summary(self) -> dict:
        return {"files": self.files, "rows": self.rows, "by_entity": dict(self.by_entity), "hours": len(self.at)}


def silent_roles(world, silent_changes: list[dict]) -> dict[str, int]:
    """The silent changes (a summary's ``silent_changes``) still in force in ``world`` as it stands:
    user LUID -> the site role the snapshots show, as :meth:`SnapshotWriter.take` last applied them.
    A user who has left the site, or whose role the log has changed since, has none."""
    role_ids = {name: role for role, name in SITE_ROLE_NAMES.items()}
    roles = {}
    for change in silent_changes:
        site = next(s for s in world.sites if s.luid == change["site_luid"])
        user = next((u for u in site.users if u.luid == change["user_luid"]), None)
        if user is not None and user.site_role_id == role_ids[change["old_role"]]:
            roles[user.luid] = role_ids[change["new_role"]]
    return roles


def no_snapshots() -> dict:
    """The ``snapshots`` summary of a run without them."""
    return {"files": 0, "rows": 0, "by_entity": {e: 0 for e in ENTITY_TYPES}, "hours": 0}
