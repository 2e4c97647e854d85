"""The marts as Tableau's own engine reads them: one multi-table Hyper file (``auditlake export hyper``)."""
