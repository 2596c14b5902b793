"""What the lobby's storage functions are given: a write transaction, or the committed reads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from server.api import Tx
from server.store.storage import LobbyDatabase

T = TypeVar("T")


class WriteTx(Tx, Protocol):
    """A write job's transaction: the plugin API's, and the counters only the lobby hands out."""

    def take(self, name: str) -> int:
        """The next number of the ``seq`` (rating order) or ``match`` (match ids) counter."""


class Reads(Protocol):
    """Reads of what has been committed, each its own snapshot."""

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]: ...

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Any | None: ...

    async def fetchone_soon(self, sql: str, params: Iterable[Any] = ()) -> Any | None:
        """A small indexed lookup (on SQLite read on the event loop's thread: no thread
        switch)."""

    async def fetchall_soon(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows of a small indexed read, as :meth:`fetchone_soon` reads them."""


Row = Sequence[Any]


async def transact(db: LobbyDatabase, job: Callable[[WriteTx], Awaitable[T]]) -> T:
    """Run ``job`` in the writer's pipelined transactions; returns once it has committed."""
    return await db.write(job)
