"""Sample data: a realistic Activity Log (``activity_log``) and Write-Back ``historical_audit``
rows (``writeback``); ``historical_audit.ndjson`` is the bundled Write-Back export."""

from pathlib import Path

BUNDLED_EXPORT = Path(__file__).with_name("historical_audit.ndjson")
