"""The refresh: every source's bronze, silver and gold in order (``layers``), as the command runs it
(``command``: the lock, the nothing-new check, the session), again every period in one process
(``every``), and its ``--summary`` (``summary``).

The layers' public names are kept here, so ``from pipelines.refresh import run_refresh`` reads as
the refresh's entry point. Importing any of these modules loads every layer's code: the command line
imports them only for the commands that refresh.
"""

from pipelines.refresh.layers import (
    LAYERS,
    RefreshReport,
    left_nothing_to_retry,
    new_run_id,
    parse_layers,
    publish_after_gold,
    recovered_schemas,
    run_refresh,
    send_alerts_after_gold,
)
from pipelines.refresh.summary import table_counts

__all__ = [
    "LAYERS",
    "RefreshReport",
    "left_nothing_to_retry",
    "new_run_id",
    "parse_layers",
    "publish_after_gold",
    "recovered_schemas",
    "run_refresh",
    "send_alerts_after_gold",
    "table_counts",
]
