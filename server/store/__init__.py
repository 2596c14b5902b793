"""Storage: SQLite (the default) or PostgreSQL, one group-committing writer, the log reader, the
plugins' storage port.

``database`` (the :class:`Database` the lobby holds), ``writer/`` (the commit
pipeline, the job's handle, queued writes), ``schema`` (tables and
migrations), ``connection`` (pragmas), ``faults`` (failed commits and failed
files), ``log`` (the match log as rated units), ``port`` (``server.api``'s
storage protocols for everything outside a write job), ``dbcheck`` (is a file
usable), ``clock`` (timestamps), ``backends`` (which database a setting names),
``copy`` (a lobby from one database to another), ``pg/`` (the same on PostgreSQL).
"""

from server.store.clock import now, today
from server.store.database import Database
from server.store.faults import CommitFailed, DatabaseUnavailable, StorageFailed

__all__ = ["CommitFailed", "Database", "DatabaseUnavailable", "StorageFailed", "now", "today"]
