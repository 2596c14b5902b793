"""Corrections: a ladder recomputed after its log changed in the past (void, adjudicate).

A system with tail corrections is replayed from the corrected unit on
(:mod:`ratings_plugin.corrections.tail`); the others, or a tail whose stored
rows do not add up, are replayed from the whole log. Either way the ratings
and history are what they would have been had the log been right from the
start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ratings_plugin import store
from ratings_plugin.book import HistoryRow, replay_ladder
from ratings_plugin.corrections.tail import (
    TailMismatch,
    corrected_book,
    start_book,
    stored_tail,
    write_tail,
)
from server.api import Book, LadderConfig, LogRow, NotPlain, RatedUnit, Tx
from server.api.systems import plain_replay, tail_corrections


def unit_rows(units: Iterable[RatedUnit]) -> Iterator[LogRow]:
    """The plain log rows of single-match ``units``."""
    for unit in units:
        if unit.match_id is None or len(unit.games) != 1:
            raise NotPlain(f"unit {unit.seq} is not a single match")
        g = unit.games[0]
        yield (unit.match_id, unit.event_id, unit.at, "+".join(g.side_a), "+".join(g.side_b),
               g.length, g.score_a, g.score_b, g.played_on.isoformat(), g.unrated_reason)


def replay_units(ladder: LadderConfig, units: Sequence[RatedUnit], ids: Mapping[str, int],
                 book: Book) -> tuple[Book, list[HistoryRow]]:
    """:func:`~ratings_plugin.book.replay_ladder` of ``units`` applied to ``book`` (which is
    changed), bit for bit, through the system's plain replay when it has one and every unit
    suits it (a few µs a match instead of ~15 µs through a book)."""
    plain = plain_replay(ladder, ids)
    if plain is not None:
        name = ladder.name
        try:
            plain.seed(book.standings.values())
            history: list[HistoryRow] = []
            for first, b1, a1, second, b2, a2, mid, eid, at in plain.pairs(unit_rows(units)):
                history.append((name, first, b1, a1, mid, eid, at))
                history.append((name, second, b2, a2, mid, eid, at))
        except NotPlain:
            pass
        else:
            book.standings.update(plain.standings())
            return book, history
    return replay_ladder(ladder, units, ids, book)


async def rebuild(tx: Tx, ladder: LadderConfig, book: Book, seq: int | None,
                  ids: dict[str, int]) -> Book:
    """The ladder after its log changed from unit ``seq`` on (``None``: anywhere), written to the
    plugin's tables; ``ids`` (name → id) learns the players of the units read."""
    if seq is not None and tail_corrections(ladder.system) is not None:
        units = await tx.log.units(ladder.name, seq)
        for unit in units:
            ids.update(unit.player_ids)
        try:
            return await _rebuild_tail(tx, ladder, book, seq, units, ids)
        except TailMismatch:  # nothing is written yet: the whole log puts everything right
            pass
    units = await tx.log.units(ladder.name)
    for unit in units:
        ids.update(unit.player_ids)
    return await _rebuild_whole(tx, ladder, units, ids)


async def _rebuild_whole(tx: Tx, ladder: LadderConfig, units: Sequence[RatedUnit],
                         ids: Mapping[str, int]) -> Book:
    # A whole ladder replayed is seconds to minutes of pure Python on a big ladder (42 s
    # for a million matches on the bench machine): on a thread, the event loop keeps
    # answering pings and reads meanwhile instead of dropping every connection.
    book, history = await asyncio.to_thread(replay_ladder, ladder, units, dict(ids))
    await store.write_ladder(tx, ladder, book.standings.values(), ids)
    await tx.execute("DELETE FROM history WHERE ladder = ?", (ladder.name,))
    await tx.executemany(store.INSERT_HISTORY, history)
    return book


async def _rebuild_tail(tx: Tx, ladder: LadderConfig, book: Book, since: int,
                        units: Sequence[RatedUnit], ids: Mapping[str, int]) -> Book:
    """The units from ``since`` on replayed from the stored state before them; only their
    history rows (in place) and their players' ratings written. Raises :class:`TailMismatch`,
    before writing anything, when the stored history and the standings do not add up."""
    names = {pid: name for name, pid in ids.items()}
    found = await stored_tail(tx, ladder, book, since, units, names)
    frozen = dict(ids)

    def replay() -> tuple[Book, list[HistoryRow]]:  # on a thread: a tail may be long
        return replay_units(ladder, units, frozen, start_book(ladder, book, found, units))

    replayed, history = await asyncio.to_thread(replay)
    await write_tail(tx, ladder.name, found.first, history, store.INSERT_HISTORY)
    await tx.executemany(store.UPSERT, sorted(store.rating_rows(
        ladder, replayed.standings.values(), ids)))
    gone = [(ladder.name, ids[p]) for p in found.before if p not in replayed.standings]
    await tx.executemany("DELETE FROM ratings WHERE ladder = ? AND player_id = ?", gone)
    return corrected_book(ladder, book, found, replayed)
