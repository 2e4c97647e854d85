"""The Activity Log source (site and tenant events): its event registry, bronze and silver."""
