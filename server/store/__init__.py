"""Storage: the core schema, the writer, the log, and the SQL of the lobby's commands."""
