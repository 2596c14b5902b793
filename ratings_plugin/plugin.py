"""The ratings plugin: applies the pure systems to lobby events, in the event's transaction.

It keeps two views per ladder. ``books`` is the writer's working state,
advanced inside transactions; ``published`` is what queries read, updated only
after the transaction commits, so nobody sees a rating before it is durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import aiosqlite

from ratings_plugin.games import Game
from ratings_plugin.ladder import LadderBook, LadderOptions, Standing, ranked_rows
from ratings_plugin.tail import (
    TailMismatch,
    corrected_book,
    start_book,
    stored_tail,
    write_tail,
)
from server import peklo_store
from server.domain import DomainEvent, EventClosed, LadderCorrected, MatchFinished, RatedUnit

HistoryRow = tuple[str, int, float | None, float, int | None, int | None, str]
RatingRow = tuple[str, int, float, int, int, int, int, str | None]  # Peklo: server/peklo_store.py


@dataclass(frozen=True)
class Change:
    player: str
    before: float | None
    after: float
    cause: dict[str, int]

    def as_dict(self, ladder: str) -> dict[str, Any]:
        change = None if self.before is None else self.after - self.before
        return {"ladder": ladder, "player": self.player, "before": self.before,
                "after": self.after, "change": change, "cause": self.cause}


@dataclass
class Outcome:
    """The rating side of one domain event, published after commit."""

    ladder: str
    standings: dict[str, Standing]
    changes: list[Change] = field(default_factory=list)
    replace: bool = False
    book: LadderBook | None = None


def rate_unit(book: LadderBook, unit: RatedUnit) -> tuple[dict[str, Standing], list[Change]]:
    """What one unit does to ``book`` (not yet accepted); the changes become history rows.

    A player gets a history row when they played in the unit or their
    displayed rating moved (ČAS normalisation moves non-players too). A player
    new to a ČAS ladder has no ``before``.
    """
    standings = book.standings  # compute() leaves the book as it is
    new = book.compute(unit.games)
    played = _players(g for g in unit.games if g.counts_for(book.options.system))
    # A ČAS close returns the whole ladder; most of it keeps its displayed rating.
    candidates = [p for p, s in new.items()
                  if p in played or (o := standings.get(p)) is None or o.rating != s.rating]
    changes: list[Change] = []
    cause = unit.cause  # made afresh on each access; the changes of one unit share it
    for player in sorted(candidates, key=str.casefold):
        s = new[player]
        old = standings.get(player)
        if old is None:
            old_rating = None if book.options.system == "cas" else book.new_standing(player).rating
        else:
            old_rating = old.rating
        if player in played or old_rating != s.rating:
            changes.append(Change(player, old_rating, s.rating, cause))
    return new, changes


def _players(games: Iterable[Game]) -> set[str]:
    return {p for g in games for p in g.players}


def history_rows(ladder: str, unit: RatedUnit, changes: Sequence[Change],
                 ids: Mapping[str, int]) -> list[HistoryRow]:
    return [(ladder, ids[c.player], c.before, float(c.after), unit.match_id, unit.event_id, unit.at)
            for c in changes]


def rating_row(ladder: str, s: Standing, ids: Mapping[str, int]) -> RatingRow:
    return next(rating_rows(ladder, (s,), ids))


def rating_rows(ladder: str, standings: Iterable[Standing], ids: Mapping[str, int]
                ) -> Iterator[RatingRow]:
    """:func:`rating_row` for many standings, made one at a time as they are written
    (a ČAS close writes the whole ladder: no list of 20,000 tuples to build and collect)."""
    iso: dict[date, str] = {}
    for s in standings:
        day = s.last_played
        if day is None:
            played = None
        else:
            played = iso.get(day)
            if played is None:
                played = iso[day] = day.isoformat()
        yield (ladder, ids[s.player], float(s.rating), s.games, s.experience, s.paluba, s.dansa,
               played)


def peklo_row(ladder: str, standings: Iterable[Standing], ids: Mapping[str, int]
              ) -> tuple[str, bytes, bytes]:
    """The ladder's stored Peklo values (one row for the whole ladder: see server/peklo_store.py)."""
    standings = list(standings)
    return peklo_store.encode_columns(ladder, [ids[s.player] for s in standings],
                                      [float(s.peklo) for s in standings])


async def write_ladder(conn: aiosqlite.Connection, ladder: str, options: LadderOptions,
                       standings: Iterable[Standing], ids: Mapping[str, int]) -> list[RatingRow]:
    """Replace everything stored of ``ladder``'s standings (not its history) with ``standings``."""
    standings = list(standings)
    rows = sorted(rating_row(ladder, s, ids) for s in standings)
    await conn.execute("DELETE FROM ratings WHERE ladder = ?", (ladder,))
    await conn.execute(peklo_store.DELETE, (ladder,))
    await conn.executemany(UPSERT, rows)
    if options.system == "cas" and standings:
        await conn.executemany(peklo_store.UPSERT, [peklo_row(ladder, standings, ids)])
    return rows


def replay_ladder(name: str, options: LadderOptions, units: Iterable[RatedUnit],
                  ids: Mapping[str, int], book: LadderBook | None = None
                  ) -> tuple[LadderBook, list[HistoryRow]]:
    """A ladder rebuilt from its log (or ``units`` applied to ``book``, which is changed): the
    book and every history row, in order."""
    if book is None:
        book = LadderBook(options)
    history: list[HistoryRow] = []
    for unit in units:
        new, changes = rate_unit(book, unit)
        book.accept(new, unit.games)
        history.extend(history_rows(name, unit, changes, ids))
    return book, history


UPSERT = """INSERT INTO ratings (ladder, player_id, rating, games, experience, paluba, dansa,
    last_played) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (ladder, player_id) DO UPDATE SET rating = excluded.rating,
    games = excluded.games, experience = excluded.experience, paluba = excluded.paluba,
    dansa = excluded.dansa, last_played = excluded.last_played"""
INSERT_HISTORY = """INSERT INTO history (ladder, player_id, before, after, match_id, event_id, at)
    VALUES (?, ?, ?, ?, ?, ?, ?)"""


class RatingsPlugin:
    """Ratings for every configured ladder (name → options)."""

    def __init__(self, ladders: Mapping[str, LadderOptions]) -> None:
        self.options = dict(ladders)
        self.books: dict[str, LadderBook] = {}
        self.published: dict[str, dict[str, Standing]] = {}
        self.ids: dict[str, int] = {}
        self._rows_cache: dict[tuple[str, date], list[dict[str, Any]]] = {}
        self._index_cache: dict[tuple[str, date],
                                tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]] = {}

    async def load(self, conn: aiosqlite.Connection, publish: bool = True) -> None:
        """Books from the ratings table; ČAS books also reload their game history.

        Inside a transaction (after a failed job) ``publish`` is false: the
        books follow the transaction, the published view waits for the commit.
        """
        from server.log import cas_history  # the log format is the server's

        self.books = {name: LadderBook(opts) for name, opts in self.options.items()}
        async with conn.execute(peklo_store.SELECT) as cur:
            stored_peklo = peklo_store.by_ladder(await cur.fetchall())
        async with conn.execute(
            "SELECT r.*, p.name FROM ratings r JOIN players p ON p.id = r.player_id"
        ) as cur:
            async for row in cur:
                book = self.books.get(row["ladder"])
                if book is None:
                    continue
                values = stored_peklo.get(row["ladder"], {})
                s = Standing(
                    player=row["name"], rating=row["rating"], games=row["games"],
                    last_played=date.fromisoformat(row["last_played"]) if row["last_played"] else None,
                    experience=row["experience"], paluba=row["paluba"], dansa=row["dansa"],
                    peklo=values.get(row["player_id"], peklo_store.DEFAULT),
                )
                book.standings[s.player] = s
        async with conn.execute("SELECT id, name FROM players") as cur:
            self.ids = {row["name"]: row["id"] async for row in cur}
        for name, book in self.books.items():
            if book.history is not None:
                book.history.add(await cas_history(conn, name))
        if publish:
            self.published = {name: dict(book.standings) for name, book in self.books.items()}
            self._rows_cache.clear()

    async def handle(self, conn: aiosqlite.Connection, event: DomainEvent) -> Outcome:
        if isinstance(event, MatchFinished | EventClosed):
            return await self._apply(conn, event.unit)
        return await self._rebuild(conn, event)

    async def _apply(self, conn: aiosqlite.Connection, unit: RatedUnit) -> Outcome:
        self.ids.update(unit.player_ids)
        book = self.books[unit.ladder]
        new, changes = rate_unit(book, unit)
        if book.options.system != "cas":
            await conn.executemany(UPSERT, rating_rows(unit.ladder, new.values(), self.ids))
        elif new:  # a close with no rated game returns nothing: the Peklo row stands
            # A close returns the whole ladder, but only Peklo moved for those outside
            # ``changes`` (LadderBook._compute_cas): their rows stay as stored.
            await conn.executemany(UPSERT, rating_rows(
                unit.ladder, (new[c.player] for c in changes), self.ids))
            await conn.executemany(peklo_store.UPSERT,
                                   [peklo_row(unit.ladder, new.values(), self.ids)])
        await conn.executemany(INSERT_HISTORY, history_rows(unit.ladder, unit, changes, self.ids))
        book.accept(new, unit.games)
        return Outcome(unit.ladder, new, changes)

    async def _rebuild(self, conn: aiosqlite.Connection, event: LadderCorrected) -> Outcome:
        self.ids.update(event.player_ids)
        for unit in event.units:
            self.ids.update(unit.player_ids)
        options = self.options[event.ladder]
        if event.since is None:
            book = await self._rebuild_whole(conn, event.ladder, options, event.units)
        else:
            try:
                book = await self._rebuild_tail(conn, event, event.since)
            except TailMismatch:  # nothing is written yet: the whole log puts everything right
                from server.log import ladder_units  # the log format is the server's

                units = await ladder_units(conn, event.ladder)
                for unit in units:
                    self.ids.update(unit.player_ids)
                book = await self._rebuild_whole(conn, event.ladder, options, units)
        old = self.published.get(event.ladder, {})
        changes = [
            Change(p, old[p].rating if p in old else None, s.rating, dict(event.cause))
            for p, s in sorted(book.standings.items())
            if p not in old or old[p].rating != s.rating
        ]
        self.books[event.ladder] = book
        return Outcome(event.ladder, dict(book.standings), changes, replace=True, book=book)

    async def _rebuild_whole(self, conn: aiosqlite.Connection, ladder: str,
                             options: LadderOptions, units: Sequence[RatedUnit]) -> LadderBook:
        # A whole ladder replayed is seconds to minutes of pure Python on a big ladder (42 s
        # for a million matches on the bench machine): on a thread, the event loop keeps
        # answering pings and reads meanwhile instead of dropping every connection.
        book, history = await asyncio.to_thread(replay_ladder, ladder, options, units,
                                                dict(self.ids))
        await write_ladder(conn, ladder, options, book.standings.values(), self.ids)
        await conn.execute("DELETE FROM history WHERE ladder = ?", (ladder,))
        await conn.executemany(INSERT_HISTORY, history)
        return book

    async def _rebuild_tail(self, conn: aiosqlite.Connection, event: LadderCorrected,
                            since: int) -> LadderBook:
        """The units from ``since`` on replayed from the stored state before them
        (ratings_plugin/tail.py); only their history rows (in place) and their players'
        ratings written. Raises :class:`TailMismatch`, before writing anything, when the
        stored history and the standings do not add up."""
        ladder, book = event.ladder, self.books[event.ladder]
        if not book.options.tail_corrections:
            raise ValueError(f"ladder {ladder!r} is corrected from its whole log only")
        names = {pid: name for name, pid in self.ids.items()}
        found = await stored_tail(conn, book, ladder, since, event.units, names)
        ids = dict(self.ids)

        from ratings_plugin.fibs_replay import replay_units  # it builds on this module

        def replay() -> tuple[LadderBook, list[HistoryRow]]:  # on a thread: a tail may be long
            return replay_units(ladder, book.options, event.units, ids,
                                start_book(book, found, event.units))
        replayed, history = await asyncio.to_thread(replay)
        await write_tail(conn, ladder, found.first, history, INSERT_HISTORY)
        await conn.executemany(UPSERT, sorted(rating_rows(ladder, replayed.standings.values(),
                                                          self.ids)))
        gone = [(ladder, self.ids[p]) for p in found.before if p not in replayed.standings]
        await conn.executemany("DELETE FROM ratings WHERE ladder = ? AND player_id = ?", gone)
        return corrected_book(book, found, replayed)

    def committed(self, outcome: Outcome) -> None:
        if outcome.replace:
            self.published[outcome.ladder] = dict(outcome.standings)
        else:
            self.published.setdefault(outcome.ladder, {}).update(outcome.standings)
        self._rows_cache = {k: v for k, v in self._rows_cache.items() if k[0] != outcome.ladder}

    def rows(self, ladder: str, as_of: date) -> list[dict[str, Any]]:
        """The published ladder's rows (cached until the ladder changes)."""
        key = (ladder, as_of)
        cached = self._rows_cache.get(key)
        if cached is None:
            book = self.books[ladder]
            cached = ranked_rows(self.options[ladder], self.published.get(ladder, {}).values(),
                                 lambda s: book.is_active(s, as_of))
            self._rows_cache[key] = cached
        return cached

    def row_of(self, ladder: str, player: str, as_of: date) -> dict[str, Any] | None:
        key = (ladder, as_of)
        index = self._index_cache.get(key)
        if index is None or self._rows_cache.get(key) is not index[0]:
            rows = self.rows(ladder, as_of)
            index = (rows, {r["player"]: r for r in rows})
            self._index_cache[key] = index
        return index[1].get(player)
