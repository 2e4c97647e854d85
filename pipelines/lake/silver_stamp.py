"""``silver_ingest_ts``: when a row reached silver, in whole seconds.

Gold's incremental marts read the silver rows newer than their newest ``silver_ingest_ts``
(dbt_project/macros/incremental.sql). Delta keeps a file's timestamp statistics truncated to the
millisecond and adds 1 ms to its max before comparing (delta-io/delta#2462), so a filter
``> newest`` can never skip the files that hold ``newest`` itself: after a first load, all of
silver. With stamps in whole seconds the marts ask ``> newest + 999 ms`` instead, the same rows, and
Delta skips every file already read.

That is exact only if a row written after gold read silver is stamped in a later second than any
row gold saw. So a stamp is the next whole second (never one already past), and the silver layer
does not end before its last stamp is past (``wait_until_stamps_past``): a gold build that starts
after it, and a silver run after that, are both later.
"""

from __future__ import annotations

import math
import time

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_issued = 0  # the newest stamp this process has handed out, in epoch seconds


def ingest_stamp() -> Column:
    """The ``silver_ingest_ts`` of rows written now: the next whole second (a literal, so a batch
    written in several jobs keeps one stamp)."""
    global _issued
    second = math.floor(time.time()) + 1
    _issued = max(_issued, second)
    return F.timestamp_seconds(F.lit(second))


def with_silver_run(df: DataFrame, run_id: str) -> DataFrame:
    """``df`` with silver's lineage columns: the run that wrote it and its stamp (every silver writer)."""
    return df.withColumn("silver_run_id", F.lit(run_id)).withColumn("silver_ingest_ts", ingest_stamp())


def wait_until_stamps_past() -> None:
    """Sleep until every stamp handed out is in the past (no wait after a silver run that took a
    second since its last stamp)."""
    delay = _issued - time.time()
    if delay > 0:
        time.sleep(delay)


def stamped_after(newest) -> Column:
    """Rows of silver stamped after ``newest`` (a stamp already read from silver): ``> the end of its
    second``, the same rows, in a form Delta skips the older files by (dbt's mart_watermark does
    the same in SQL)."""
    return F.col("silver_ingest_ts") > F.date_trunc("second", F.lit(newest)) + F.expr("INTERVAL 999 MILLISECONDS")
