"""Tooling around the product, never imported by ``pipelines``: sample data generators, a
throwaway PostgreSQL server for tests, benchmarks, and the ``auditlake`` commands that use them."""
