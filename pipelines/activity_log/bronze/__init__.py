"""Bronze: every Activity Log line as it came, exactly once, with the file it came from.

- ``layout``: what a path under the landing root is (family, layout, event-type folder, date);
- ``listing``: walking the landing root (recent date folders only on ordinary runs);
- ``ledger``: the file ledger, every file's verdict (landed, quarantined, skipped, changed);
- ``decode``: file bytes -> lines, with a verdict per file (gzip checked file by file);
- ``verdicts``: those checks run over a delivery's files, on the driver or in a Spark job;
- ``rows``: lines -> bronze rows (routing fields, hash, lineage);
- ``land``: one run of all of it, imported from ``land`` itself, not from here: the run lands the
  entity snapshots too, whose bronze imports the modules above.
"""

from pipelines.activity_log.bronze.layout import FAMILIES
from pipelines.activity_log.bronze.rows import BRONZE_COLUMNS, to_bronze_rows

__all__ = ["BRONZE_COLUMNS", "FAMILIES", "to_bronze_rows"]
