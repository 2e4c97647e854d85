"""What lives outside the lake's tables: the analysts' masked copies brought up to date, the Great
Expectations reports scrubbed, and a note on OCSF exports already delivered."""

from __future__ import annotations

import re
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.analyst.publish import publish_analyst_tables
from pipelines.analyst.publish import tables_location as analyst_tables_location
from pipelines.config.load import Config
from pipelines.lake import storage
from pipelines.lake.table_names import tables
from pipelines.personal_data.erase.person import Person
from pipelines.personal_data.erase.record import ErasureReport
from pipelines.runtime.spark_session import small_tables


def refresh_analyst_copies(spark: SparkSession, cfg: Config, report: ErasureReport, log=print) -> list[str]:
    """The analysts' copies of the marts the erasure rewrote, copied again from them (their LUIDs
    are in clear, their pseudonyms a keyed hash of the values erased); -> those copies, as Delta
    path tables to vacuum. Safe to repeat: a copy already made from a mart's version is not made again."""
    if not cfg.settings.analyst.enabled:
        return []
    gold = tables(cfg).gold_schema + "."
    marts = [name.removeprefix(gold) for name in report.tables_vacuumed if name.startswith(gold)]
    if marts:
        with small_tables(spark, cfg, [gold + mart for mart in marts]):  # what the copies read
            publish_analyst_tables(spark, cfg, log=log)
    location = analyst_tables_location(cfg)
    return [
        f"delta.`{storage.join(location, mart)}`"
        for mart in marts
        if storage.is_dir(spark, storage.join(location, mart))
    ]


def ocsf_exports_note(spark: SparkSession, cfg: Config) -> str | None:
    """`auditlake export ocsf` wrote copies outside the lake (Parquet for Security Lake), which an
    erasure cannot rewrite: say so when there are any (docs/ocsf.md)."""
    table = tables(cfg).ocsf_exports
    if not spark.catalog.tableExists(table):
        return None
    exports, since, places = spark.sql(
        f"SELECT count(DISTINCT export_id), cast(min(exported_at) AS date), concat_ws(', ', collect_set(out_dir)) "
        f"FROM {table}"
    ).first()
    if not exports:
        return None
    return (
        f"erase: not erased: {exports} OCSF exports since {since} to {places} are copies handed to another "
        "system (ops.ocsf_exports); erase the person there too (docs/ocsf.md)"
    )


def scrub_quality_reports(context_dir: Path, person: Person, tokens: dict[str, str]) -> int:
    """GX's stored validation results and Data Docs pages quote a few unexpected values: replace the
    person's identifiers in those files too. -> files rewritten."""
    if not context_dir.is_dir():
        return 0
    patterns = [
        (re.compile(re.escape(v), re.IGNORECASE), tokens[v]) for v in person.identifiers() if v.lower() in person.keys
    ]
    patterns += [
        (re.compile(r'(?i)(?<=["\'>])' + re.escape(v) + r'(?=["\'<])'), tokens[v])
        for v in person.identifiers()
        if v.lower() not in person.keys
    ]
    rewritten = 0
    for path in context_dir.rglob("*"):
        if not path.is_file() or path.suffix not in (".json", ".html"):
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new = text
        for pattern, token in patterns:
            new = pattern.sub(token, new)
        if new != text:
            path.write_text(new, encoding="utf-8", errors="surrogateescape")
            rewritten += 1
    return rewritten
