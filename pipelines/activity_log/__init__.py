"""The Activity Log source (site and tenant events): its event registry, bronze and silver."""

# The two record families, each with its own bronze, silver and staging tables: site events
# (the Activity Log proper) and tenant events (Tableau Cloud Manager).
FAMILIES = ("site", "tenant")
