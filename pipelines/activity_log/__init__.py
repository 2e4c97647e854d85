"""The Activity Log source (site and tenant events): its event registry, bronze and silver."""

# The two record families, each with its own bronze, silver and staging tables: site events
# (the Activity Log proper) and tenant events (Tableau Cloud Manager).
FAMILIES = ("site", "tenant")

# The folder layouts of a landing root, as the file ledger records them: the project's own, the
# two Tableau writes (date-first Platform Data API / S3 replica, schema-first extractor), the
# lake's copies of Tableau Server's log files (pipelines/server_logs), and files with no partition
# folder at all (bronze/layout.py tells them apart).
AUDITLAKE, DATE_FIRST, SCHEMA_FIRST, UNPARTITIONED = "auditlake", "date_first", "schema_first", "unpartitioned"
SERVER_LOG = "server_log"
# The landing root's folder that holds those copies.
SERVER_LOG_FOLDER = "server"
