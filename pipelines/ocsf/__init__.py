"""OCSF export: gold's security facts as Open Cybersecurity Schema Framework events, written as
Parquet in Amazon Security Lake's custom-source layout (``auditlake export ocsf``, docs/ocsf.md).

Modules:

* :mod:`.mapping`  gold mart rows -> OCSF events, one mapping per (class, mart), the class list
* :mod:`.export`   the incremental export: watermarks in ``ops.ocsf_exports``, the Parquet layout

Nothing here is needed to build the lake: the export reads gold and writes outside it.
"""

from __future__ import annotations

# The OCSF versions the mapping is written for and tested against (tests/test_ocsf.py validates every
# exported row with the schema ocsf-json-schema ships). 1.3.0 is the newest version Amazon Security
# Lake is reported to accept from custom sources (docs/ocsf.md).
OCSF_VERSIONS = ("1.3.0",)

# Security Lake names the IAM role of a custom source after it and caps the name at 20 characters;
# one source per class is <source_name>-<class_uid>, so the prefix may have 15.
SOURCE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,14}"
