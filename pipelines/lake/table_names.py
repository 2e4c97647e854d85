"""Table names, in one place. A table's schema says its layer; the schemas come from conf."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.config.load import Config


@dataclass(frozen=True)
class Tables:
    bronze_schema: str
    silver_schema: str
    ops_schema: str
    gold_schema: str
    analyst_schema: str

    def bronze_raw(self, family: str) -> str:
        return f"{self.bronze_schema}.{family}_events_raw"

    def bronze_entity(self, entity_type: str) -> str:
        """An entity type's snapshots as delivered (``entityType=<entity_type>`` Parquet files)."""
        return f"{self.bronze_schema}.entity_{entity_type}"

    def entity_history(self, entity_type: str) -> str:
        """An entity type's type-2 history, built from its snapshots."""
        return f"{self.silver_schema}.entity_{entity_type}_history"

    def entity_types(self, spark) -> list[str]:
        """The entity types bronze holds snapshots of (one table each)."""
        if not spark.catalog.databaseExists(self.bronze_schema):
            return []
        rows = spark.sql(f"SHOW TABLES IN {self.bronze_schema} LIKE 'entity_*'").collect()
        return sorted(r["tableName"][len("entity_") :] for r in rows if not r["isTemporary"])

    @property
    def snapshot_hours(self) -> str:
        """One row per (entity type, site, snapshot hour) silver has seen: applied or late."""
        return f"{self.ops_schema}.snapshot_hours"

    @property
    def file_ledger(self) -> str:
        return f"{self.bronze_schema}.file_ledger"

    def silver_events(self, family: str) -> str:
        return f"{self.silver_schema}.{family}_events"

    def event_view(self, event_type: str) -> str:
        return f"{self.silver_schema}.`{event_type}`"

    @property
    def quarantine(self) -> str:
        return f"{self.silver_schema}.quarantine"

    @property
    def duplicates(self) -> str:
        return f"{self.silver_schema}.duplicate_records"

    @property
    def dq_results(self) -> str:
        return f"{self.ops_schema}.dq_results"

    @property
    def refresh_runs(self) -> str:
        return f"{self.ops_schema}.refresh_runs"

    @property
    def silver_batches(self) -> str:
        return f"{self.ops_schema}.silver_batches"

    @property
    def quarantine_replays(self) -> str:
        return f"{self.ops_schema}.quarantine_replays"

    @property
    def writeback_raw(self) -> str:
        return f"{self.bronze_schema}.writeback_audit_raw"

    @property
    def writeback_audit(self) -> str:
        return f"{self.silver_schema}.writeback_audit"

    @property
    def writeback_quarantine(self) -> str:
        return f"{self.silver_schema}.writeback_quarantine"

    @property
    def feed_completeness(self) -> str:
        """Per family × site × delivery hour (pipelines/activity_log/feed.py)."""
        return f"{self.ops_schema}.feed_completeness"

    @property
    def writeback_watermarks(self) -> str:
        return f"{self.ops_schema}.writeback_watermarks"

    @property
    def retired_rows(self) -> str:
        """One row per bronze row a retention run retired: its id, landing hash, run and file (no content)."""
        return f"{self.ops_schema}.retired_rows"

    @property
    def retention_runs(self) -> str:
        return f"{self.ops_schema}.retention_runs"

    @property
    def legal_holds(self) -> str:
        """One row per legal hold (`auditlake hold add`), released ones kept."""
        return f"{self.ops_schema}.legal_holds"

    @property
    def erasures(self) -> str:
        """One row per `auditlake erase` (pipelines/personal_data/erase/): counts and tokens, never erased values."""
        return f"{self.ops_schema}.erasures"

    @property
    def erased_files(self) -> str:
        """One row per landed file an erasure rewrote (a Server log piece): its new size, time and SHA-256."""
        return f"{self.ops_schema}.erased_files"

    @property
    def alert_deliveries(self) -> str:
        """One row per detection queued for the webhook (pipelines/alerts/webhook.py): pending or sent, the payload."""
        return f"{self.ops_schema}.alert_deliveries"

    @property
    def detections(self) -> str:
        """Every detection of the detection reports, one row each (dbt); what `auditlake alerts` sends."""
        return f"{self.gold_schema}.rpt_detections"

    @property
    def ocsf_exports(self) -> str:
        """One row per (`auditlake export ocsf`, OCSF class, mart) that wrote events: the watermarks
        (pipelines/ocsf/export.py)."""
        return f"{self.ops_schema}.ocsf_exports"

    def gold(self, name: str) -> str:
        """A gold table (dbt names them: marts fct_/dim_/rpt_)."""
        return f"{self.gold_schema}.{name}"

    def analyst(self, name: str) -> str:
        """An analyst-facing view over a mart's masked copy, in the analysts' server (pipelines/analyst)."""
        return f"{self.analyst_schema}.{name}"

    @property
    def gold_staging_schema(self) -> str:
        """dbt's staging and intermediate views (dbt_project.yml ``+schema: staging``)."""
        return f"{self.gold_schema}_staging"

    @property
    def table_schemas(self) -> tuple[str, ...]:
        """Every schema holding the lakehouse's tables: each layer's (bronze, silver, ops, gold) and gold's
        staging schema, where dbt keeps its incremental intermediate tables (e.g. the site-role history)."""
        return (self.bronze_schema, self.silver_schema, self.ops_schema, *self.derived_schemas)

    @property
    def derived_schemas(self) -> tuple[str, ...]:
        """The schemas whose every table is rebuilt from another layer: gold's and its staging schema."""
        return (self.gold_schema, self.gold_staging_schema)


def tables(cfg: Config) -> Tables:
    return Tables(
        cfg.settings.bronze.schema,
        cfg.settings.silver.schema,
        cfg.settings.ops.schema,
        cfg.settings.gold.schema,
        cfg.settings.analyst.schema,
    )
