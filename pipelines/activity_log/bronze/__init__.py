"""Bronze: every Activity Log line as it came, exactly once, with the file it came from.

- ``layout``: what a path under the landing root is (family, layout, event-type folder, date);
- ``listing``: walking the landing root (recent date folders only on ordinary runs);
- ``ledger``: the file ledger, every file's verdict (landed, quarantined, skipped, changed);
- ``decode``: file bytes -> lines, with a verdict per file (gzip checked file by file);
- ``rows``: lines -> bronze rows (routing fields, hash, lineage);
- ``land``: one run of all of it.
"""

from pipelines.activity_log.bronze.land import LandingResult, ensure_bronze_tables, land_bronze
from pipelines.activity_log.bronze.layout import FAMILIES
from pipelines.activity_log.bronze.rows import BRONZE_COLUMNS, to_bronze_rows

__all__ = ["BRONZE_COLUMNS", "FAMILIES", "LandingResult", "ensure_bronze_tables", "land_bronze", "to_bronze_rows"]
