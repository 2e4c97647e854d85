"""A deterministic, realistic ``historical_audit``: as an export file, or loaded into PostgreSQL.

Users of a few sites edit a few Write-Back datasets over some days: they submit lines
(``INSERT_DATA``), delete them (``DELETE_DATA``), edit them (``EDIT_DATA``: in tabular mode
``editDataInsert`` / ``editDataDelete``; otherwise ``ACTIONPARAMS`` is the key of the line
replaced and ``DATASETKEY`` the new line), and now and then alter a dataset
(``ALTER_DATASET``, ``renameColumn;addColumn``-style params). Line keys are coherent: a line
is deleted or replaced only after it was inserted. Every data change is written to both
databases with the same ``ID``; dataset changes to the metadata database only.
``ACTIONDATE_LOCAL`` is the UTC time in the server's time zone (default Europe/Athens; the
default window crosses the spring DST change, so the offset moves from +120 to +180).

``dirty=True`` adds one row of each kind in ``DIRTY_KINDS`` to the metadata database.
Two of them (``null_id``, ``bad_date``) cannot be stored in the database (``ID`` is its
primary key, the dates are ``timestamp`` columns): they exist only in export files.
"""

from __future__ import annotations

import csv
import json
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from pipelines.writeback import (
    COLUMNS,
    DATASET_OPERATIONS,
    EDIT_DELETE_PARAM,
    EDIT_INSERT_PARAM,
    ROLE_FIELD,
    ROLES,
)

DEFAULT_START = datetime(2026, 3, 23, tzinfo=UTC)
DEFAULT_DAYS = 14
DEFAULT_TIME_ZONE = "Europe/Athens"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # how PostgreSQL prints a timestamp without fraction

# (dataset, site)
DATASETS = (
    ("forecasts_modifications", "default"),
    ("sales_forecast", "default"),
    ("budget_2026", "Finance"),
    ("headcount_plan", "Finance"),
    ("price_overrides", "Sales-EMEA"),
    ("churn_annotations", "Sales-EMEA"),
)
USERS = {
    "default": ("ana.silva", "joao.pereira", "wb.admin"),
    "Finance": ("maria.costa", "tiago.santos", "wb.admin"),
    "Sales-EMEA": ("sofia.martins", "rui.almeida", "ines.ferreira"),
}
DIRTY_KINDS = ("unknown_action", "missing_date", "bad_id", "null_id", "bad_date")
EXPORT_ONLY_KINDS = ("null_id", "bad_date")

TABLE_DDL = """CREATE TABLE IF NOT EXISTS {table} (
  "ID" varchar(36) PRIMARY KEY,
  "ACTIONDATE_LOCAL" timestamp,
  "ACTIONDATE_UTC" timestamp,
  "ACTIONNAME" varchar(64),
  "ACTIONPARAMS" text,
  "DATASET" varchar(255),
  "DATASETKEY" varchar(36),
  "SYSTEM" varchar(16),
  "USERNAME" varchar(255),
  "IDWIDGETCONFIGURATION" varchar(36),
  "WRITEBACK_SITE" varchar(255)
);"""


@dataclass(frozen=True)
class AuditRow:
    database: str  # metadata | persistence
    values: dict  # COLUMNS -> str | None
    dirty: str | None = None  # one of DIRTY_KINDS


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _times(values: dict, when: datetime, zone: ZoneInfo) -> dict:
    return values | {
        "ACTIONDATE_UTC": when.strftime(TIME_FORMAT),
        "ACTIONDATE_LOCAL": when.astimezone(zone).strftime(TIME_FORMAT),
    }


def audit_row(rng: random.Random, when: datetime, zone: ZoneInfo, **values) -> dict:
    """One row's values: a new ID, both dates, the rest from ``values`` (absent -> None)."""
    row = dict.fromkeys(COLUMNS) | {"ID": _uuid(rng)} | values
    return _times(row, when, zone)


def generate_historical_audit(
    actions: int = 300,
    seed: int = 7,
    start: datetime = DEFAULT_START,
    days: int = DEFAULT_DAYS,
    time_zone: str = DEFAULT_TIME_ZONE,
    dirty: bool = False,
) -> list[AuditRow]:
    """``actions`` user actions as rows of both databases, in time order. Same arguments, same rows."""
    rng = random.Random(seed)
    zone = ZoneInfo(time_zone)
    widgets = {name: [_uuid(rng) for _ in range(rng.randint(1, 2))] for name, _ in DATASETS}
    live: dict[str, list[str]] = {name: [] for name, _ in DATASETS}
    seconds = sorted(rng.randrange(days * 86400) for _ in range(actions))
    rows: list[AuditRow] = []
    for offset in seconds:
        when = start + timedelta(seconds=offset)
        dataset, site = rng.choice(DATASETS)
        common = {
            "DATASET": dataset,
            "WRITEBACK_SITE": site,
            "USERNAME": rng.choice(USERS[site]),
            "SYSTEM": "Desktop" if rng.random() < 0.2 else "Server",
            "IDWIDGETCONFIGURATION": rng.choice(widgets[dataset]),
        }
        lines = live[dataset]
        roll = rng.random()
        if roll < 0.08:
            ops = [op for op in DATASET_OPERATIONS if rng.random() < 0.4] or [rng.choice(DATASET_OPERATIONS)]
            values = audit_row(rng, when, zone, ACTIONNAME="ALTER_DATASET", ACTIONPARAMS=";".join(ops), **common)
            rows.append(AuditRow("metadata", values))
            continue
        if not lines or roll < 0.40:
            key = _uuid(rng)
            lines.append(key)
            values = audit_row(rng, when, zone, ACTIONNAME="INSERT_DATA", DATASETKEY=key, **common)
        elif roll < 0.52:
            key = lines.pop(rng.randrange(len(lines)))
            values = audit_row(rng, when, zone, ACTIONNAME="DELETE_DATA", DATASETKEY=key, **common)
        elif roll < 0.62:  # tabular mode: a new cell/line
            key = _uuid(rng)
            lines.append(key)
            values = audit_row(
                rng, when, zone, ACTIONNAME="EDIT_DATA", ACTIONPARAMS=EDIT_INSERT_PARAM, DATASETKEY=key, **common
            )
        elif roll < 0.70:  # tabular mode: a cell/line deleted
            key = lines.pop(rng.randrange(len(lines)))
            values = audit_row(
                rng, when, zone, ACTIONNAME="EDIT_DATA", ACTIONPARAMS=EDIT_DELETE_PARAM, DATASETKEY=key, **common
            )
        else:  # an edit: the old line is disabled, the new one takes its place
            old = lines.pop(rng.randrange(len(lines)))
            new = _uuid(rng)
            lines.append(new)
            values = audit_row(rng, when, zone, ACTIONNAME="EDIT_DATA", ACTIONPARAMS=old, DATASETKEY=new, **common)
        rows += [AuditRow(role, values) for role in ROLES]
    if dirty:
        rows += _dirty_rows(rng, start + timedelta(days=days), zone)
    return rows


def _dirty_rows(rng: random.Random, when: datetime, zone: ZoneInfo) -> list[AuditRow]:
    dataset, site = DATASETS[0]
    base = {"DATASET": dataset, "WRITEBACK_SITE": site, "USERNAME": USERS[site][0], "SYSTEM": "Server"}
    kinds = {
        "unknown_action": {"ACTIONNAME": "PURGE_DATA"},
        "missing_date": {"ACTIONNAME": "INSERT_DATA", "ACTIONDATE_UTC": None, "DATASETKEY": _uuid(rng)},
        "bad_id": {"ACTIONNAME": "INSERT_DATA", "ID": "row-17", "DATASETKEY": _uuid(rng)},
        "null_id": {"ACTIONNAME": "INSERT_DATA", "ID": None, "DATASETKEY": _uuid(rng)},
        "bad_date": {"ACTIONNAME": "DELETE_DATA", "ACTIONDATE_UTC": "2026-02-30 25:61:00", "DATASETKEY": _uuid(rng)},
    }
    out = []
    for i, kind in enumerate(DIRTY_KINDS):
        values = audit_row(rng, when + timedelta(minutes=i), zone, **base)
        out.append(AuditRow("metadata", values | kinds[kind], kind))
    return out


# ---- export files --------------------------------------------------------------------------


def write_export(path: Path, rows: list[AuditRow]) -> Path:
    """An export of both databases: NDJSON (``.ndjson``/``.json``) or CSV, with ``DATABASE_ROLE``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{**r.values, ROLE_FIELD: r.database} for r in rows]
    with path.open("w", encoding="utf-8", newline="") as fh:
        if path.suffix == ".csv":
            writer = csv.DictWriter(fh, fieldnames=[*COLUMNS, ROLE_FIELD], lineterminator="\n")
            writer.writeheader()
            writer.writerows(records)
        else:
            fh.writelines(json.dumps(rec, ensure_ascii=False) + "\n" for rec in records)
    return path


def read_export(path: Path, default_database: str = "metadata") -> list[AuditRow]:
    """The rows of an NDJSON export (what ``write_export`` wrote)."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            rows.append(AuditRow(rec.get(ROLE_FIELD) or default_database, {c: rec.get(c) for c in COLUMNS}))
    return rows


# ---- PostgreSQL ----------------------------------------------------------------------------


def _sql_literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + str(value).replace("'", "''") + "'"


def _storable(values: dict) -> bool:
    """Can the database hold this row (ID is the primary key, the dates are timestamps)?"""
    if not values.get("ID"):
        return False
    for col in ("ACTIONDATE_UTC", "ACTIONDATE_LOCAL"):
        if values.get(col) is not None:
            try:
                datetime.strptime(values[col], TIME_FORMAT)
            except ValueError:
                return False
    return True


def insert_sql(rows: list[dict], table: str = "historical_audit") -> str:
    """``INSERT`` statements for rows (dicts of COLUMNS), in batches of 500."""
    cols = ", ".join(f'"{c}"' for c in COLUMNS)
    out = []
    for i in range(0, len(rows), 500):
        values = ",\n".join("(" + ", ".join(_sql_literal(r.get(c)) for c in COLUMNS) + ")" for r in rows[i : i + 500])
        out.append(f"INSERT INTO {table} ({cols}) VALUES\n{values};")
    return "\n".join(out)


def load_into_postgres(server, databases: dict[str, str], rows: list[AuditRow], table: str = "historical_audit") -> int:
    """Create ``table`` in each role's database (``server``: a ``PgServer``) and insert its rows.

    Rows the database cannot hold (see ``EXPORT_ONLY_KINDS``) are skipped; returns how many.
    """
    skipped = 0
    for role, database in databases.items():
        if not database:
            continue
        mine = [r.values for r in rows if r.database == role]
        storable = [v for v in mine if _storable(v)]
        skipped += len(mine) - len(storable)
        server.psql(database, TABLE_DDL.format(table=table) + "\n" + (insert_sql(storable, table) if storable else ""))
    return skipped


def load_export_into_postgres(server, export: Path, databases: dict[str, str], table: str = "historical_audit") -> int:
    """Create the databases and load an NDJSON export into them (the bundled sample, by default)."""
    for database in databases.values():
        if database:
            server.create_database(database)
    return load_into_postgres(server, databases, read_export(export), table)
