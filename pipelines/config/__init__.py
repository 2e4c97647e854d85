"""Configuration: the keys (settings), the files they come from (load) and where the project's files are (project)."""
