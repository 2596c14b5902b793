"""What the lobby needs of its database, whichever backend holds it.

:class:`~server.store.database.Database` (SQLite) and
:class:`~server.store.pg.database.PgDatabase` (PostgreSQL) both implement
:class:`LobbyDatabase`; the lobby, its handlers and ``transact`` are typed with it, so
neither backend's own methods leak into the code that must run on both (mypy checks the
two against it below).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from server.api import Reader, Tx

T = TypeVar("T")


class LobbyDatabase(Protocol):
    """One writer committing jobs in groups, committed reads, and the writer's hooks."""

    path: str
    on_commit_failure: Callable[[], Awaitable[None]] | None
    on_job_failure: Callable[[], Awaitable[None]] | None
    on_job_start: Callable[[], None] | None
    on_moved: Callable[[bool, str | None], Awaitable[bool]] | None
    on_republish: Callable[[], Awaitable[None]] | None
    on_commit: Callable[[float, int], None] | None

    @property
    def commits(self) -> int:
        """Transactions committed since ``open`` (each one a group of jobs)."""

    @property
    def fault(self) -> str | None:
        """Why the database stopped taking writes for good (a failed file), if it did."""

    async def open(self) -> None: ...

    async def close(self) -> None:
        """Finish every queued job, then close the connections."""

    async def write(self, job: Callable[[Any], Awaitable[T]], reserve: bool = False) -> T:
        """Run ``job`` in the writer's transaction; return once it is committed. ``reserve``
        (several servers): the commit also reserves the place in the shared pushes of the
        pushes the job's command will cause (:data:`server.store.pg.database.RESERVED`)."""

    def writer_tx(self) -> Tx:
        """Reads on the writer's connection while no job runs (plugins loading their state)."""

    @property
    def committed(self) -> Reader:
        """What has been committed, through the plugin API's ``Reader``."""

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]: ...

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Any | None: ...

    async def fetchone_soon(self, sql: str, params: Iterable[Any] = ()) -> Any | None:
        """A small indexed lookup, as cheap as the backend can make it."""

    async def fetchall_soon(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows of a small indexed read, read as :meth:`fetchone_soon` reads one."""

    def data_version(self) -> int | None:
        """A number that changes when anything is committed, or ``None`` where no cheap one
        exists (a poll then always reads)."""


if TYPE_CHECKING:
    from server.store.database import Database
    from server.store.pg.database import PgDatabase

    def _both_implement_it(sqlite: Database, pg: PgDatabase) -> tuple[LobbyDatabase, ...]:
        return sqlite, pg
