"""Which of the dbt project's nodes a gold build runs: those downstream of a silver table that moved.

A mart is a function of what it reads: silver's tables, the project's files and the vars ("now" in a
report is the lake's newest event: macros/lake_now.sql). When only silver moved since the last
successful build, a node none of whose sources moved would make the same rows again: a delivery of
Activity Log events alone leaves the Write-Back and snapshot marts, their data tests and their
analysts' copies as they are. An hourly refresh pays for what its delivery touched.
"""

from __future__ import annotations

import json
from pathlib import Path


def _sources(manifest: dict) -> dict[str, str]:
    """Source unique id -> the table it reads, as ``schema.table``."""
    return {uid: f"{s['schema']}.{s.get('identifier') or s['name']}".lower() for uid, s in manifest["sources"].items()}


def _without_a_source(manifest: dict) -> list[str]:
    """Models that read no source, directly or through their parents (built every time: no input says
    they could be skipped)."""
    nodes = manifest["nodes"]
    reads: dict[str, bool] = {}

    def reads_a_source(uid: str) -> bool:
        if uid not in reads:
            reads[uid] = False  # a cycle cannot make it True (dbt forbids them anyway)
            parents = nodes[uid]["depends_on"]["nodes"] if uid in nodes else []
            reads[uid] = any(p.startswith("source.") or (p in nodes and reads_a_source(p)) for p in parents)
        return reads[uid]

    return sorted(n["name"] for uid, n in nodes.items() if n["resource_type"] == "model" and not reads_a_source(uid))


def moved_sources_selection(manifest_path: Path, unmoved: set[str]) -> tuple[list[str], list[str]] | None:
    """dbt's ``--select`` for a build in which the silver tables ``unmoved`` (``schema.table``) are as at
    the last build: every other source with all it feeds (``source:<name>.<table>+``) and any model that
    reads no source; and the tables left out. None: build everything (no manifest of the project yet,
    or no source left out)."""
    if not manifest_path.is_file():
        return None
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    sources, unmoved = _sources(manifest), {name.lower() for name in unmoved}
    kept = sorted(uid for uid, table in sources.items() if table not in unmoved)
    left_out = sorted({table for table in sources.values() if table in unmoved})
    if not left_out or not kept:
        return None
    # source.<project>.<source name>.<table name>
    select = [f"source:{'.'.join(uid.split('.')[2:])}+" for uid in kept] + _without_a_source(manifest)
    return select, left_out
