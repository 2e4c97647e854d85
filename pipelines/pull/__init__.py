"""``auditlake pull``: the Activity Log (and the sites' entity snapshots) from Tableau Cloud Manager's
Platform Data API into the landing tree, in the date-first layout bronze reads, for sites without
S3 delivery (docs/pull.md)."""
