"""The lake's storage: table names, Delta helpers, locations local or remote, state files, SQL text, silver's stamp."""
