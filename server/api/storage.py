"""The storage port: how a plugin reads and writes, whatever database the lobby runs on.

A plugin keeps its own tables (described by a :class:`Schema`, created and
migrated by the lobby) and writes only those, always inside a transaction the
lobby hands it (:class:`Tx`): the transaction of the domain event it reacts
to, or one it asks for. Statements use ``?`` placeholders and the SQL both
backends understand.

The log is the lobby's: it is read through :class:`LogReader`, and its tables
(``players``, ``matches``, ``match_players``, ``events``) may be joined,
read-only, in a plugin's own queries, with the columns documented on
:data:`LOG_TABLES`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from server.api.records import RatedUnit

Row = Any
"""A result row: indexable by position and by column name."""

LOG_TABLES: Mapping[str, str] = {
    "players": "id, name, name_key (name.casefold()), role, created_at, last_login",
    "matches": "id, ladder, event_id, side_a, side_b ('name' or 'name1+name2'), length (NULL: "
               "unlimited), played_on (YYYY-MM-DD), status (playing, claimed, disputed, "
               "finished, aborted, voided), winner ('a', 'b', 'draw'), score_a, score_b, how, "
               "unrated_reason, seq (the unit's place in the rating order when the match is "
               "a unit of its own), created_at, finished_at",
    "match_players": "match_id, player_id, side ('a' or 'b')",
    "events": "id, name, ladder, date, status (open, closed), created_at, closed_at, seq (the "
              "closed event's place in the rating order)",
}


class LogReader(Protocol):
    """The match log as the units ladders apply, in the order they were applied."""

    async def units(self, ladder: str, since: int = 0, until: int | None = None
                    ) -> list[RatedUnit]:
        """The ladder's units whose ``seq`` is ``since`` or later (0: every one) and ``until``
        or earlier (``None``: to the last), in order."""

    async def event_games(self, ladder: str) -> list[tuple[str, str, int, int]]:
        """Every rated game of the ladder's closed events, in the order they were rated, as
        (side A, side B, score A, score B) of singles games (for whole-history systems)."""


class Reader(Protocol):
    """Reads; outside a transaction each call sees everything committed when it starts."""

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""

    @property
    def log(self) -> LogReader: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Row]:
        """The rows one at a time, giving other tasks turns on a long read."""


class Tx(Reader, Protocol):
    """An open write transaction. Nobody hears of what it writes before it commits."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        """A write whose outcome the job does not read: the backend may send it with the
        commit."""


class Store(Reader, Protocol):
    """A database opened outside the lobby (a ``matchlobby`` sub-command)."""

    async def transaction(self, job: Callable[[Tx], Awaitable[Any]]) -> Any:
        """Run ``job`` in one write transaction: committed when it returns, rolled back when
        it raises."""

    async def snapshot(self, job: Callable[[Tx], Awaitable[Any]]) -> Any:
        """Run ``job`` over one consistent view of the database (its reads see no commit made
        meanwhile); nothing it writes is kept."""

    def native(self) -> Any:
        """The backend's own connection, for a plugin's optional fast paths (they must have a
        way through the port too): a ``sqlite3.Connection`` on SQLite, an ``asyncpg``
        connection on PostgreSQL."""

    async def close(self) -> None: ...


ColumnType = Literal["integer", "real", "text", "blob"]


@dataclass(frozen=True)
class TableColumn:
    name: str
    type: ColumnType
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    """A table; ``clustered`` asks for the rows to be kept in primary-key order (SQLite's
    ``WITHOUT ROWID``), a hint a backend may ignore."""

    name: str
    columns: tuple[TableColumn, ...]
    primary_key: tuple[str, ...] = ()
    clustered: bool = False
    autoincrement: str | None = None  # an integer key column numbered by the database


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    columns: tuple[str, ...]
    unique: bool = False


DataStep = Callable[[Tx], Awaitable[None]]
Step = Table | Index | DataStep


@dataclass(frozen=True)
class Schema:
    """A plugin's tables: each version's steps, applied in order, one transaction a version.

    The lobby records each plugin's version by ``name`` and refuses a database
    whose version is newer than the code's.
    """

    name: str
    versions: Mapping[int, Sequence[Step]] = field(default_factory=dict)

    @property
    def version(self) -> int:
        return max(self.versions, default=0)
