"""What the lobby's storage functions are given: a write transaction, or the committed reads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from server.api import Tx
from server.store.storage import LobbyDatabase

T = TypeVar("T")


class WriteTx(Tx, Protocol):
    """A write job's transaction: the plugin API's, and the counters only the lobby hands out."""

    async def hold_ladder(self, ladder: str, rebuild: bool = False) -> None:
        """Until the commit no other writer changes ``ladder``'s ratings, and the plugins'
        copy of it is what the database holds (one writer alone: nothing to do).
        ``rebuild``: the job rewrites the ladder (another writer reloads it whole)."""

    async def next_seq(self, ladder: str) -> int:
        """The place in the log (``seq``) of a unit rated on ``ladder``, which it holds."""

    async def next_match_id(self) -> int:
        """A new match's id."""

    async def rows(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> int:
        """Run ``statements`` (SQL, parameters) in order, now; how many rows the last one
        returned or changed. For statements whose rows the job does not read: a lock taken, a
        row counted, a conditional write. On PostgreSQL they go in one round trip with the
        writes queued before them."""


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

APPEND_LOCKS = {"players": 0x6D6C7031, "account_changes": 0x6D6C6163}


async def in_id_order(tx: Tx, table: str) -> None:
    """Other servers read the rows of ``table`` by id, each after the last it saw; where
    writers share the database, a transaction appends to it holding the table's append lock
    until its commit, so the ids become visible in their order and none is skipped."""
    if getattr(tx, "backend", "") == "postgresql":
        await tx.execute(f"SELECT pg_advisory_xact_lock({APPEND_LOCKS[table]})")


async def transact(db: LobbyDatabase, job: Callable[[WriteTx], Awaitable[T]],
                   reserve: bool = False) -> T:
    """Run ``job`` in the writer's pipelined transactions; returns once it has committed."""
    return await db.write(job, reserve)
