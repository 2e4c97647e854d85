"""Land new Activity Log files in bronze, exactly once, by the file ledger.

One run: ledger what a killed run left unledgered; list the landing root (only recent date
folders, unless a full listing is due); keep the files the ledger has not decided; read them in
one batch read (raw bytes, split into lines in Spark's Python workers: one bad file is a verdict,
not a failed job); write one Delta commit per family; ledger every file. Nothing new: no commit.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log.bronze import ledger
from pipelines.activity_log.bronze.decode import EMPTY_FILE, LANDED, check_gzip
from pipelines.activity_log.bronze.layout import FAMILIES, RECORD_EXTENSIONS, named_gzip
from pipelines.activity_log.bronze.listing import ListedFile, list_landing
from pipelines.activity_log.bronze.rows import BRONZE_COLUMNS, BRONZE_SCHEMA, lineage_path, to_bronze_rows
from pipelines.activity_log.bronze.verdicts import file_verdicts
from pipelines.config.load import Config
from pipelines.entity_snapshots.bronze import land_snapshots
from pipelines.lake import storage
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.table_names import Tables, tables
from pipelines.runtime.spark_session import describe_jobs

# Silver reads bronze's new rows by Delta version (change data feed: for append-only tables it
# reads the files a commit added); per-file statistics on the columns lineage queries filter on.
BRONZE_PROPERTIES = {
    "delta.enableChangeDataFeed": "true",
    "delta.dataSkippingStatsColumns": "parse_status,event_type,event_time,family,source_file,ingest_ts,run_id",
}


@dataclass
class LandingResult:
    family: str
    table: str
    rows_landed: int
    files_landed: int
    malformed_rows: int
    skipped_reason: str | None = None
    # file verdicts of this run whose family the path tells (an unpartitioned file counts as site)
    files_quarantined: int = 0
    files_skipped: int = 0
    files_changed: int = 0
    snapshot_files: int = 0  # entity snapshot files landed (site only: Tableau snapshots sites)
    snapshot_rows: int = 0
    problems: list[str] = field(default_factory=list)  # one line per file a person should look at


def ensure_bronze_tables(spark: SparkSession, t: Tables) -> None:
    for family in FAMILIES:
        create_table_if_missing(spark, t.bronze_raw(family), BRONZE_SCHEMA, BRONZE_PROPERTIES)
    ledger.ensure_ledger(spark, t)


def _state_path(cfg: Config) -> str:
    return storage.join(cfg.checkpoint_dir, "bronze_state.json")


def _read_state(spark: SparkSession, cfg: Config) -> dict:
    """Bronze's small state: the run in progress (until its ledger commit) and listings per root."""
    text = storage.read_text(spark, _state_path(cfg))
    try:
        return json.loads(text) if text and text.strip() else {}
    except json.JSONDecodeError:  # a kill mid-write: start the listing count again, recover by bronze itself
        return {"in_progress": "unknown"}


def _write_state(spark: SparkSession, cfg: Config, state: dict) -> None:
    storage.write_text(spark, _state_path(cfg), json.dumps(state, sort_keys=True))


def _listing_plan(cfg: Config, state: dict, newest: date | None, root: str, full: bool) -> date | None:
    """None (walk every folder) or the cut-off day (recent date folders only); every folder on the
    first run, on request, and every ``bronze.listing.full_every_runs`` runs."""
    since_full = state.get("listings", {}).get(root, {}).get("runs_since_full")
    if full or newest is None or since_full is None or since_full + 1 >= cfg.settings.bronze.listing.full_every_runs:
        return None
    return _window_start(cfg, newest)


def _window_start(cfg: Config, newest: date) -> date:
    return newest - timedelta(days=cfg.settings.bronze.listing.lookback_days)


def listing_window_start(spark: SparkSession, cfg: Config) -> date | None:
    """The first day the next ordinary listing walks (older date folders wait for a full one); None:
    the next listing walks every folder (nothing landed yet)."""
    newest = ledger.newest_path_date(spark, tables(cfg))
    return None if newest is None else _window_start(cfg, newest)


def _read_lines(spark: SparkSession, files: list[ListedFile]) -> DataFrame:
    """Every line of ``files`` (gzip by name), with the file's lineage: Spark's own text source."""
    reader = spark.read.format("text").option("ignoreMissingFiles", "true")
    return storage.load_files(spark, reader, [f.path for f in files]).select(
        "value",
        lineage_path(F.col("_metadata.file_path")).alias("source_file"),
        F.col("_metadata.file_size").alias("source_file_size"),
        F.col("_metadata.file_modification_time").alias("source_file_mtime"),
    )


def gzip_verdicts(
    spark: SparkSession, files: list[ListedFile], on_driver: bool | None = None
) -> dict[str, tuple[str, str | None, str | None]]:
    """path -> (verdict, reason, detail) of every ``.gz`` file among ``files`` that could be opened."""
    return file_verdicts(spark, [f for f in files if named_gzip(f.path)], check_gzip, on_driver)


def _write(frame: DataFrame, table: str, run_id: str) -> None:
    (
        frame.select(*BRONZE_COLUMNS)
        .write.format("delta")
        .mode("append")
        .option("userMetadata", ledger.COMMIT_MARK + run_id)
        .saveAsTable(table)
    )


def _read_and_land(
    spark: SparkSession, t: Tables, files: list[ListedFile], run_id: str, log
) -> tuple[list[ledger.LedgerEntry], dict[str, dict]]:
    """Judge the new .gz files, read the good ones with the rest, append one commit per family;
    -> (ledger entries, figures per family)."""
    describe_jobs(spark, "bronze: .gz files checked")
    verdicts = gzip_verdicts(spark, files)
    entries = [
        ledger.LedgerEntry(f.path, f.info, f.size, f.mtime_ms, *verdicts[f.path])
        for f in files
        if verdicts.get(f.path, (LANDED,))[0] != LANDED
    ]
    good = [f for f in files if verdicts.get(f.path, (LANDED,))[0] == LANDED]
    # The path tells the family of nearly every file: one read and one commit per family. Files whose
    # path says nothing are read once (kept in memory) and split by their records.
    unsure = [f for f in good if f.info.family is None]
    if unsure:
        mixed = to_bronze_rows(
            _read_lines(spark, unsure).withColumn("path_family", F.lit(None).cast("string")), None, run_id
        ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        for family in FAMILIES:
            mine = [f for f in good if f.info.family == family]
            frames = [to_bronze_rows(_read_lines(spark, mine), family, run_id)] if mine else []
            if unsure:
                frames.append(mixed.where(F.col("family") == family))
            if frames and (sum(f.size for f in mine) or unsure):
                describe_jobs(spark, f"bronze: {family}: read, route, hash, commit")
                frame = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
                _write(frame, t.bronze_raw(family), run_id)
                log(f"bronze: {family}: committed the lines of {len(mine)} files to {t.bronze_raw(family)}")
    finally:
        if unsure:
            mixed.unpersist()
    # What each file gave, read back from this run's commits (two narrow columns of the new files).
    describe_jobs(spark, "bronze: rows per file read back")
    landed = None
    for family in FAMILIES:
        part = (
            spark.table(t.bronze_raw(family))
            .where(F.col("run_id") == run_id)
            .groupBy("source_file")
            .agg(F.count(F.lit(1)).alias("rows"), F.count_if(F.col("parse_status") != "ok").alias("malformed"))
            .withColumn("family", F.lit(family))
        )
        landed = part if landed is None else landed.unionByName(part)
    per_file: dict[str, int] = {}
    figures: dict[str, dict] = {}
    for r in landed.collect():
        per_file[r["source_file"]] = per_file.get(r["source_file"], 0) + r["rows"]
        fig = figures.setdefault(r["family"], {"rows": 0, "files": 0, "malformed": 0})
        fig["rows"] += r["rows"]
        fig["files"] += 1
        fig["malformed"] += r["malformed"]
    for f in good:
        rows = per_file.get(f.path, 0)
        if not rows and not storage.exists(spark, f.path):
            log(f"bronze: {f.path} disappeared between listing and reading; it is looked for again next run")
            continue
        entries.append(
            ledger.LedgerEntry(f.path, f.info, f.size, f.mtime_ms, LANDED, None if rows else EMPTY_FILE, None, rows)
        )
    return entries, figures


def land_bronze(
    spark: SparkSession,
    cfg: Config,
    run_id: str,
    source_dir: Path | str | None = None,
    log=print,
    full_listing: bool = False,
    noted: list[ledger.LedgerEntry] | None = None,
) -> list[LandingResult]:
    """Land every file under the landing root the ledger has not decided; one result per family.
    ``noted``: entries decided before this run listed (a server log that vanished), ledgered with it."""
    t = tables(cfg)
    root = str(source_dir) if source_dir is not None else cfg.landing_dir
    results = {f: LandingResult(f, t.bronze_raw(f), 0, 0, 0) for f in FAMILIES}
    started = time.monotonic()
    ensure_bronze_tables(spark, t)
    state = _read_state(spark, cfg)
    if state.get("in_progress"):  # a run was killed between its bronze commits and its ledger commit
        ledger.recover_unledgered(spark, t, root, log=log)
    newest = ledger.newest_path_date(spark, t)
    cutoff = _listing_plan(cfg, state, newest, root, full_listing)
    listed = list_landing(spark, root, cutoff)
    known = ledger.known_versions(spark, t, cutoff)
    to_read, entries = ledger.plan_files(listed, known)
    entries += noted or []
    snapshots = [f for f in to_read if f.info.entity_type]
    to_read = [f for f in to_read if not f.info.entity_type]
    walked = "every folder" if cutoff is None else f"date folders from {cutoff} on"
    log(
        f"bronze: {len(listed)} files under {root} ({walked}): {len(to_read)} new to read, "
        f"{len(snapshots)} new entity snapshots, {len(entries)} decided without reading"
    )
    if not listed:
        for r in results.values():
            r.skipped_reason = f"no files under {root}"
    figures: dict[str, dict] = {}
    if to_read or snapshots:
        _write_state(spark, cfg, {**state, "in_progress": run_id})
    if to_read:
        read_entries, figures = _read_and_land(spark, t, to_read, run_id, log)
        entries += read_entries
    if snapshots:
        describe_jobs(spark, "bronze: entity snapshots")
        snapshot_entries = land_snapshots(spark, t, snapshots, run_id, log=log)
        entries += snapshot_entries
        landed = [e for e in snapshot_entries if e.status == ledger.LANDED]
        results["site"].snapshot_files, results["site"].snapshot_rows = len(landed), sum(e.rows for e in landed)
    describe_jobs(spark, "bronze: ledger commit")
    ledger.record(spark, t, entries, run_id)
    if cutoff is None and entries:
        ledger.compact(spark, t)  # the ledger gains a small file per run: compacted on full listings
    listings = dict(state.get("listings", {}))
    listings[root] = {"runs_since_full": 0 if cutoff is None else listings.get(root, {}).get("runs_since_full", 0) + 1}
    _write_state(spark, cfg, {"listings": listings})
    log(f"bronze: done in {time.monotonic() - started:.1f}s")

    for family, fig in figures.items():
        r = results[family]
        r.rows_landed, r.files_landed, r.malformed_rows = fig["rows"], fig["files"], fig["malformed"]
    for e in entries:
        r = results[e.info.family or "site"]
        if e.status == ledger.QUARANTINED:
            r.files_quarantined += 1
            r.problems.append(
                f"bronze: file quarantined ({e.reason}): {e.path}: {e.detail}; replace it with a good "
                "copy and the next refresh lands it"
            )
        elif e.status == ledger.SKIPPED:
            r.files_skipped += 1
        elif e.status == ledger.CHANGED:
            r.files_changed += 1
            r.problems.append(f"bronze: file changed after it landed: {e.path}: {e.detail}")
    if listed and not any(f.info.readable for f in listed) and not ledger.has_landed(spark, t):
        kinds = ", ".join(sorted({f.info.skip for f in listed if f.info.skip}))
        log(
            f"bronze: none of the {len(listed)} files under {root} is an Activity Log file ({kinds}): looked for "
            f"{'/'.join(RECORD_EXTENSIONS)} files (gzip or not) in the project's site/ and tenant/ folders or in "
            "Tableau's layouts (siteLuid=…, eventType=…, y=/m=/d=/h= partitions)"
        )
    return [results[f] for f in FAMILIES]
