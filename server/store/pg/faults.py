"""A PostgreSQL server that went away, told apart from a statement that failed."""

from __future__ import annotations

from typing import Any


def lost_connection(error: BaseException, conn: Any) -> bool:
    """Whether ``error`` means the server or the connection to it went away."""
    import asyncpg

    if conn is not None and conn.is_closed():
        return True
    return isinstance(error, OSError | ConnectionError | asyncpg.PostgresConnectionError
                      | asyncpg.exceptions.ConnectionDoesNotExistError
                      | asyncpg.exceptions.AdminShutdownError
                      | asyncpg.exceptions.CannotConnectNowError)
