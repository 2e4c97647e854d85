"""A packaged data source for Tableau (``auditlake export hyper --tdsx``): ``auditlake.tdsx``, the Hyper
file with a ``.tds`` that declares what an author would otherwise draw by hand.

- Every mart is a logical table (Tableau's object model: relationships, not joins, so each table
  keeps its own level of detail).
- Relationships form a tree, as Tableau's logical layer requires: ``dim_users``, ``dim_content`` and
  ``dim_groups`` relate to ``dim_sites`` on ``site_luid``; every other mart relates to the first
  dimension of ``PARENT_ORDER`` whose key columns it has (a sign-in to its user, a permission change
  to its content, a report to its site), or as ``OTHER_LINKS`` says. A site's sign-ins and
  permission changes meet in ``dim_sites``.
- Each field has a caption (its name in words) and a description: the mart's schema YAML, else the
  shared glossary (pipelines/analyst/column_glossary.yaml). Folders group the fields by subject (the
  dbt folder of the mart). A few calculated fields an admin asks for first (``CALCULATIONS``).

The ``.tds`` is written from the Hyper file's own catalog, so its fields and types are the file's.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

from pipelines.analyst.publish import MARTS_DIR, column_description, mart_docs
from pipelines.hyper.export import SCHEMA

TDSX_FILE = "auditlake.tdsx"
TDS_FILE = "auditlake.tds"
EXTRACTS_DIR = "Data/Extracts"
DATASOURCE = "Tableau audit lakehouse"
CONNECTION = "hyper.auditlake"

# dimension -> its key; a dimension other than dim_sites relates to dim_sites on site_luid
DIMENSION_KEYS = {
    "dim_sites": ("site_luid",),
    "dim_users": ("site_luid", "user_luid"),
    "dim_content": ("content_luid",),
    "dim_groups": ("group_luid",),
}
ROOT = "dim_sites"
# a mart's parent: the first of these whose key columns the mart has
PARENT_ORDER = ("dim_users", "dim_content", "dim_groups", "dim_sites")
# marts with no dimension's key, related through another column: mart -> (its column, table, that column).
# A burst to its first failed sign-in; a Write-Back change to the user by name (Write-Back records user
# names, and both columns hold the same keyed pseudonym of a name).
OTHER_LINKS = {
    "rpt_failed_login_bursts": ("first_event_id", "fct_logins", "event_id"),
    "fct_writeback_changes": ("username", "dim_users", "user_name"),
}

# the dbt folder of a mart -> its folder in Tableau's data pane
FOLDERS = {
    "security": "Sign-ins and security",
    "identity": "Users, groups and sites",
    "access": "Permissions",
    "access_history": "Access history",
    "content": "Content",
    "jobs": "Jobs",
    "detections": "Detections",
    "hygiene": "Hygiene",
    "feed": "Feed health",
    "writeback": "Write-back",
}

# (caption, Tableau datatype, table, formula over the table's columns as {column}, description)
CALCULATIONS = (
    (
        "Failed sign-ins",
        "integer",
        "fct_logins",
        "SUM(IF {outcome} = 'failure' THEN 1 ELSE 0 END)",
        "Sign-in attempts that failed.",
    ),
    (
        "Failed sign-in rate",
        "real",
        "fct_logins",
        "SUM(IF {outcome} = 'failure' THEN 1 ELSE 0 END) / COUNT({event_id})",
        "Failed sign-in attempts as a share of all attempts.",
    ),
    (
        "Failed job rate",
        "real",
        "fct_background_jobs",
        "SUM(IF {result} = 'failed' THEN 1 ELSE 0 END) / COUNT({job_id})",
        "Background jobs (extract refreshes, subscriptions, flows) that failed, as a share of all jobs.",
    ),
    ("Session hours", "real", "fct_sessions", "SUM({duration_seconds}) / 3600", "Time signed in, in hours."),
    (
        "High or critical findings",
        "integer",
        "rpt_detections",
        "SUM(IF {severity} = 'high' OR {severity} = 'critical' THEN 1 ELSE 0 END)",
        "Detections of severity high or critical.",
    ),
)

# Hyper's type -> (Tableau's datatype, role, type, the remote type code Tableau writes for it)
_TYPES = {
    "BIG_INT": ("integer", "measure", "quantitative", "20"),
    "INT": ("integer", "measure", "quantitative", "3"),
    "SMALL_INT": ("integer", "measure", "quantitative", "2"),
    "DOUBLE": ("real", "measure", "quantitative", "5"),
    "BOOL": ("boolean", "dimension", "nominal", "11"),
    "TEXT": ("string", "dimension", "nominal", "129"),
    "DATE": ("date", "dimension", "ordinal", "133"),
    "TIMESTAMP": ("datetime", "dimension", "ordinal", "135"),
    "TIMESTAMP_TZ": ("datetime", "dimension", "ordinal", "135"),
}
# integers that name or count something rather than measure it stay dimensions
_ID_COLUMN = re.compile(r"(_id|_luid|_key|_number|version)$")
_WORDS = {
    "luid": "LUID",
    "id": "ID",
    "ip": "IP",
    "idp": "IdP",
    "pat": "PAT",
    "url": "URL",
    "utc": "UTC",
    "ts": "time",
    "dim": "",
    "fct": "",
    "rpt": "",
}


def caption(name: str) -> str:
    """``actor_user_luid`` -> ``Actor user LUID``; ``rpt_token_misuse`` -> ``Token misuse``."""
    words = [_WORDS.get(w, w) for w in name.split("_")]
    text = " ".join(w for w in words if w)
    return text[:1].upper() + text[1:]


def read_hyper_tables(hyper_file: Path) -> dict[str, list[tuple[str, str]]]:
    """Table -> [(column, Hyper type tag)] of the marts in the file (schema ``Extract``), in order."""
    from tableauhyperapi import Connection, HyperProcess, Telemetry

    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
        with Connection(hyper.endpoint, str(hyper_file)) as conn:
            return {
                str(t.name.unescaped): [
                    (str(c.name.unescaped), c.type.tag.name) for c in conn.catalog.get_table_definition(t).columns
                ]
                for t in sorted(conn.catalog.get_table_names(SCHEMA), key=lambda t: str(t.name.unescaped))
            }


def relationships(columns: dict[str, list[tuple[str, str]]]) -> dict[str, tuple[str, tuple[tuple[str, str], ...]]]:
    """Table -> (its parent, the (its column, the parent's column) pairs they relate on): a tree rooted
    at ``dim_sites``. A mart related to nothing is left out (Tableau needs every logical table related)."""
    names = {table: {c for c, _t in cols} for table, cols in columns.items()}
    parents = {}
    for table in columns:
        if table == ROOT:
            continue
        if table in DIMENSION_KEYS:
            parents[table] = (ROOT, tuple((k, k) for k in DIMENSION_KEYS[ROOT]))
            continue
        for dim in PARENT_ORDER:
            if dim in columns and set(DIMENSION_KEYS[dim]) <= names[table]:
                parents[table] = (dim, tuple((k, k) for k in DIMENSION_KEYS[dim]))
                break
        else:
            mine, other, theirs = OTHER_LINKS.get(table, ("", "", ""))
            if mine in names[table] and theirs in names.get(other, set()):
                parents[table] = (other, ((mine, theirs),))
    return parents


def local_names(columns: dict[str, list[tuple[str, str]]]) -> dict[tuple[str, str], str]:
    """(table, column) -> the field's name in the data source, unique as Tableau needs: the column's
    own name in the first table (dimensions first) that has it, ``column (table)`` in the others."""
    seen: set[str] = set()
    out = {}
    for table in _table_order(columns):
        for column, _type in columns[table]:
            out[(table, column)] = f"[{column}]" if column not in seen else f"[{column} ({table})]"
            seen.add(column)
    return out


def _table_order(columns: dict) -> list[str]:
    dims = [d for d in DIMENSION_KEYS if d in columns]
    return dims + sorted(t for t in columns if t not in DIMENSION_KEYS)


def _folder_of() -> dict[str, str]:
    """Mart -> its folder caption, from the dbt folder its SQL is in."""
    return {p.stem: FOLDERS.get(p.parent.name, caption(p.parent.name)) for p in MARTS_DIR.rglob("*.sql")}


def build_tds(columns: dict[str, list[tuple[str, str]]], hyper_name: str) -> ET.Element:
    """The data source XML over the Hyper file ``<EXTRACTS_DIR>/<hyper_name>`` with ``columns``."""
    related = relationships(columns)
    columns = {t: cols for t, cols in columns.items() if t == ROOT or t in related}
    docs, folders = mart_docs(), _folder_of()
    names = local_names(columns)
    order = _table_order(columns)
    ds = ET.Element("datasource", {"formatted-name": DATASOURCE, "inline": "true", "version": "18.1"})
    conn = ET.SubElement(ds, "connection", {"class": "federated"})
    named = ET.SubElement(
        ET.SubElement(conn, "named-connections"), "named-connection", {"caption": DATASOURCE, "name": CONNECTION}
    )
    ET.SubElement(
        named,
        "connection",
        {
            "authentication": "auth-none",
            "author-locale": "en_US",
            "class": "hyper",
            "dbname": f"{EXTRACTS_DIR}/{hyper_name}",
            "default-settings": "yes",
            "schema": SCHEMA,
            "server": "",
            "sslmode": "",
            "username": "tableau_internal_user",
            "workgroup-auth-mode": "as-is",
        },
    )
    collection = ET.SubElement(conn, "relation", {"type": "collection"})
    for table in order:
        ET.SubElement(collection, "relation", _relation(table))
    records = ET.SubElement(conn, "metadata-records")
    for table in order:
        for ordinal, (column, hyper_type) in enumerate(columns[table]):
            datatype, _role, _kind, remote = _TYPES.get(hyper_type, _TYPES["TEXT"])
            record = ET.SubElement(records, "metadata-record", {"class": "column"})
            for tag, text in (
                ("remote-name", column),
                ("remote-type", remote),
                ("local-name", names[(table, column)]),
                ("parent-name", f"[{table}]"),
                ("remote-alias", column),
                ("ordinal", str(ordinal)),
                ("local-type", datatype),
                ("contains-null", "true"),
                ("object-id", f"[{table}]"),
            ):
                ET.SubElement(record, tag).text = text
    ET.SubElement(ds, "aliases", {"enabled": "yes"})
    for table in order:
        doc = docs.get(table)
        for column, hyper_type in columns[table]:
            datatype, role, kind, _remote = _TYPES.get(hyper_type, _TYPES["TEXT"])
            if role == "measure" and _ID_COLUMN.search(column):
                role, kind = "dimension", "ordinal"
            field = ET.SubElement(
                ds,
                "column",
                {
                    "caption": caption(column),
                    "datatype": datatype,
                    "name": names[(table, column)],
                    "role": role,
                    "type": kind,
                },
            )
            _describe(field, column_description(doc, column) if doc else "")
    for index, (label, datatype, table, formula, description) in enumerate(CALCULATIONS):
        if table not in columns:
            continue
        field = ET.SubElement(
            ds,
            "column",
            {
                "caption": label,
                "datatype": datatype,
                "name": f"[Calculation_{index + 1}]",
                "role": "measure",
                "type": "quantitative",
            },
        )
        ET.SubElement(field, "calculation", {"class": "tableau", "formula": calculation_formula(formula, table, names)})
        _describe(field, description)
    common = ET.SubElement(ds, "folders-common")
    by_folder: dict[str, list[str]] = {}
    for table in order:
        by_folder.setdefault(folders.get(table, "Other"), []).extend(names[(table, c)] for c, _t in columns[table])
    for folder in sorted(by_folder):
        node = ET.SubElement(common, "folder", {"name": folder})
        for name in by_folder[folder]:
            ET.SubElement(node, "folder-item", {"name": name, "type": "field"})
    ET.SubElement(
        ds, "layout", {"dim-ordering": "alphabetic", "measure-ordering": "alphabetic", "show-structure": "true"}
    )
    graph = ET.SubElement(ds, "object-graph")
    objects = ET.SubElement(graph, "objects")
    for table in order:
        obj = ET.SubElement(objects, "object", {"caption": caption(table), "id": f"[{table}]"})
        ET.SubElement(ET.SubElement(obj, "properties", {"context": ""}), "relation", _relation(table))
    links = ET.SubElement(graph, "relationships")
    for table, (parent, keys) in sorted(related.items(), key=lambda kv: order.index(kv[0])):
        link = ET.SubElement(links, "relationship")
        pairs = [(names[(table, mine)], names[(parent, theirs)]) for mine, theirs in keys]
        expression = ET.SubElement(link, "expression", {"op": "AND"}) if len(pairs) > 1 else link
        for mine, theirs in pairs:
            equal = ET.SubElement(expression, "expression", {"op": "="})
            ET.SubElement(equal, "expression", {"op": mine})
            ET.SubElement(equal, "expression", {"op": theirs})
        ET.SubElement(link, "first-end-point", {"object-id": f"[{table}]"})
        ET.SubElement(link, "second-end-point", {"object-id": f"[{parent}]"})
    return ds


def calculation_formula(formula: str, table: str, names: dict[tuple[str, str], str]) -> str:
    """``{column}`` in ``formula`` -> the field name of ``table``'s column (KeyError: not a column)."""
    return re.sub(r"\{(\w+)\}", lambda m: names[(table, m[1])], formula)


def _relation(table: str) -> dict[str, str]:
    return {"connection": CONNECTION, "name": table, "table": f"[{SCHEMA}].[{table}]", "type": "table"}


def _describe(field: ET.Element, text: str) -> None:
    if text:
        ET.SubElement(ET.SubElement(ET.SubElement(field, "desc"), "formatted-text"), "run").text = text


def write_tdsx(hyper_file: Path, out: Path | None = None) -> Path:
    """``auditlake.tdsx`` beside ``hyper_file`` (or at ``out``): the ``.tds`` and the Hyper file at
    ``Data/Extracts/``. Written to a temporary name and renamed: a reader never sees half a package."""
    target = out or hyper_file.with_name(TDSX_FILE)
    tds = build_tds(read_hyper_tables(hyper_file), hyper_file.name)
    ET.indent(tds)
    text = ET.tostring(tds, encoding="unicode", xml_declaration=False)
    partial = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(TDS_FILE, "<?xml version='1.0' encoding='utf-8' ?>\n" + text + "\n")
        package.write(hyper_file, f"{EXTRACTS_DIR}/{hyper_file.name}")
    partial.replace(target)
    return target
