"""Write-Back audit: the extension's ``historical_audit`` table, into bronze and silver.

Write-Back keeps ``historical_audit`` in two relational databases: **metadata** (data
changes and dataset-level changes such as ``ALTER_DATASET``) and **persistence** (data
changes only). The same action, with the same ``ID``, is usually in both.

Modules:

* :mod:`.source`     read a CSV/NDJSON export, or the databases over JDBC (watermark + overlap)
* :mod:`.bronze`     land rows as strings, once per (database, ID) -> ``bronze.writeback_audit_raw``
* :mod:`.silver`     typed, decoded, one row per ID -> ``silver.writeback_audit`` + quarantine

Sample rows and a throwaway PostgreSQL are tooling: ``auditlake_devtools/sample/writeback.py`` and
``auditlake_devtools/pg_server.py``.

The columns and action names below are those of the reference
(``writeback-historical-audit.txt``).
"""

from __future__ import annotations

# historical_audit, in the documented order
COLUMNS = (
    "ID",
    "ACTIONDATE_LOCAL",
    "ACTIONDATE_UTC",
    "ACTIONNAME",
    "ACTIONPARAMS",
    "DATASET",
    "DATASETKEY",
    "SYSTEM",
    "USERNAME",
    "IDWIDGETCONFIGURATION",
    "WRITEBACK_SITE",
)
# An export that merges both databases says on each line which one the row came from.
ROLE_FIELD = "DATABASE_ROLE"
ROLES = ("metadata", "persistence")

DATA_ACTIONS = ("INSERT_DATA", "DELETE_DATA", "EDIT_DATA")
DATASET_ACTIONS = ("ALTER_DATASET",)
ACTIONS = DATA_ACTIONS + DATASET_ACTIONS
# EDIT_DATA's ACTIONPARAMS in tabular mode; otherwise the UUID of the line that was replaced
EDIT_INSERT_PARAM = "editDataInsert"
EDIT_DELETE_PARAM = "editDataDelete"
# ALTER_DATASET's ACTIONPARAMS: operations joined by ';'
DATASET_OPERATIONS = ("renameColumn", "dropColumn", "modifyColumn", "addColumn")
