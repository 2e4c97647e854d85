"""The Spark runtime: the session, Delta's JARs, the class archive that starts it faster, a standalone cluster."""
