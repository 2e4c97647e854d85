"""Reading the lake: the Thrift servers (``auditlake serve``) and one query from the shell (``auditlake sql``)."""
