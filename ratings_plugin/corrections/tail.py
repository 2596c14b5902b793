"""A ladder corrected from the corrected unit on, not from its first unit.

A void or an adjudication changes one match of the log; every unit before it
still rates as it did. For a system with tail corrections (FIBS), a player's
standing before a unit follows from the stored history from that unit on
(the tail): their rating is the ``before`` of their first row there, and the
system rewinds the rest from the tail's games (:func:`stored_tail`). So only
the units from the corrected one on are replayed, through the same
:func:`~ratings_plugin.book.rate_unit` as a whole replay (or the system's
plain replay, which gives the same rows), and of their rows only those that
changed are written, in place where they can be (:func:`write_tail`): the
same rows, bit for bit, as a replay of the whole log. On the bench machine a
void ten matches from the end of a million-match ladder takes 0.05 s where
rewriting its 2M history rows took two minutes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from ratings_plugin.book import HistoryRow
from server.api import Book, LadderConfig, RatedUnit, Tx
from server.api.systems import tail_corrections

# The ladder's matches from a seq on, in order: the corrected one first (a voided match keeps
# its seq), through the (ladder, seq) index.
TAIL_MATCHES = "SELECT id FROM matches WHERE ladder = ? AND seq >= ? ORDER BY seq"
# A match's first history row on a ladder, through its players' (player, ladder, id) index.
MATCH_ROW = """SELECT min(h.id) FROM match_players mp CROSS JOIN history h
    WHERE mp.match_id = ?2 AND h.player_id = mp.player_id AND h.ladder = ?1 AND h.match_id = ?2"""
# The tail's rows with their matches' lengths and days, through the rowid range.
TAIL_ROWS = """SELECT h.player_id, h.before, m.length, m.played_on FROM history h
    JOIN matches m ON m.id = h.match_id WHERE h.ladder = ? AND h.id >= ? ORDER BY h.id"""
# A player's last day before the tail (the days of their matches before it).
LAST_DAY = """SELECT max(m.played_on) FROM history h JOIN matches m ON m.id = h.match_id
    WHERE h.player_id = ? AND h.ladder = ? AND h.id < ?"""


class TailMismatch(ValueError):
    """The stored tail and the ladder's standings do not add up: replay the whole log."""


@dataclass
class Tail:
    """The stored rows from the corrected unit on, and the players' standings before them.

    ``first`` is the id of the tail's first history row (``None``: there is
    none); ``before`` holds every player with a row in the tail, mapped to
    their standing before it (``None`` for a player new to the ladder there),
    save that its last day may be a later one that the replay of the tail
    ends on anyway (:func:`stored_tail`).
    """

    first: int | None
    before: dict[str, Any]


@dataclass
class _Played:
    """A player's rows in the stored tail: their first ``before``, their games' lengths, last
    day."""

    before: float
    lengths: list[int | None]
    last: str = ""


async def stored_tail(tx: Tx, ladder: LadderConfig, book: Book, since: int,
                      units: Sequence[RatedUnit], names: Mapping[int, str]) -> Tail:
    """What the stored history says of ``ladder`` from its unit ``since`` on (``names``: id →
    name).

    A player's standing before the tail is their standing in ``book`` rewound
    by the system over the stored tail's games. The last day is ``book``'s
    unless the corrected tail (``units``) no longer reaches it; then it is
    read from their earlier matches. Else the day kept may be later than the
    one before the tail, but the replay ends on the same day (the systems with
    tail corrections read no day while rating). So the work is the tail's, not
    the ladder's: reading each player's earlier rows took 24 s for a void
    10,000 matches from the end of the bench's ladder.
    """
    first = None
    async for (match_id,) in tx.stream(TAIL_MATCHES, (ladder.name, since)):
        found = await tx.fetchone(MATCH_ROW, (ladder.name, match_id))
        first = None if found is None else found[0]
        if first is not None:
            break
    if first is None:
        return Tail(None, {})
    played: dict[int, _Played] = {}
    async for player_id, before, length, day in tx.stream(TAIL_ROWS, (ladder.name, first)):
        mine = played.get(player_id)
        if mine is None:
            mine = played[player_id] = _Played(before, [])
        mine.lengths.append(length)
        mine.last = max(mine.last, day)
    still = await asyncio.to_thread(_last_days, units, ladder)  # a long tail
    system, options = tail_corrections(ladder.system), ladder.options
    if system is None:
        raise TailMismatch(f"{ladder.system.title} has no tail corrections")
    standings: dict[str, Any] = {}
    for player_id, mine in played.items():
        name = names.get(player_id)
        now = None if name is None else book.standings.get(name)
        if name is None or now is None or now.games < len(mine.lengths):
            raise TailMismatch(f"player {player_id}: the stored tail is more than the standing")
        if now.games == len(mine.lengths):
            standings[name] = None
            continue
        last = now.last_played
        if last is not None and last.isoformat() == mine.last and (
                still.get(name, "") < mine.last):
            day = await tx.fetchone(LAST_DAY, (player_id, ladder.name, first))
            last = None if day is None or day[0] is None else date.fromisoformat(day[0])
        if last is None:
            raise TailMismatch(f"player {player_id}: no day before the tail")
        try:
            standings[name] = system.rewind(options, now, mine.before, last, mine.lengths)
        except ValueError as e:
            raise TailMismatch(str(e)) from None
    return Tail(first, standings)


def _last_days(units: Sequence[RatedUnit], ladder: LadderConfig) -> dict[str, str]:
    """Each player's last day (ISO) in the games of ``units`` that the ladder rates."""
    counts, options = ladder.system.counts, ladder.options
    days: dict[str, str] = {}
    for unit in units:
        for game in unit.games:
            if not counts(options, game):
                continue
            day = game.played_on.isoformat()
            for player in game.players:
                if days.get(player, "") < day:
                    days[player] = day
    return days


# The stored tail as the rewrite compares it with the replayed one, in id order.
STORED_TAIL = """SELECT id, player_id, before, after, match_id, event_id, at FROM history
    WHERE ladder = ? AND id >= ? ORDER BY id"""
UPDATE_VALUES = "UPDATE history SET before = ?, after = ? WHERE id = ?"
DELETE_ROW = "DELETE FROM history WHERE id = ?"
DELETE_FROM = "DELETE FROM history WHERE ladder = ? AND id >= ?"


@dataclass
class Written:
    """What :func:`write_tail` did to the stored tail's rows."""

    kept: int = 0
    updated: int = 0
    deleted: int = 0
    inserted: int = 0


async def write_tail(tx: Tx, ladder: str, first: int | None, history: Sequence[HistoryRow],
                     insert: str) -> Written:
    """Make the ladder's stored rows from ``first`` on the replayed ``history``, in place.

    A stored row of a match the replay no longer rates (a voided one) is
    deleted; the others are walked beside the replayed rows, and while they
    are the same rows (player, match, event, time) only changed ratings are
    updated, by id: ``before`` and ``after`` are in no index. From the first
    row that is not the same (none, after a void or an adjudication), the
    stored rows are deleted and the replayed ones inserted after the rest.
    The ids in order are then what the generic rewrite gives. A correction
    deep in the log changes most of the tail's ratings: deleting and
    inserting them would cost a search of both history indexes for each row,
    updating them costs none.
    """
    done = Written()
    if first is None:
        await tx.executemany(insert, history)
        done.inserted = len(history)
        return done
    rated = {row[4] for row in history}
    updates: list[tuple[float | None, float, int]] = []
    gone: list[tuple[int]] = []
    k = 0
    differs = None
    async for row_id, player, before, after, match, event, at in tx.stream(
            STORED_TAIL, (ladder, first)):
        if match not in rated:
            gone.append((row_id,))
            continue
        new = history[k] if k < len(history) else None
        if new is None or (new[1], new[4], new[5], new[6]) != (player, match, event, at):
            differs = row_id
            break
        if (new[2], new[3]) != (before, after):
            updates.append((new[2], new[3], row_id))
        else:
            done.kept += 1
        k += 1
    done.updated, done.deleted, done.inserted = len(updates), len(gone), len(history) - k
    if differs is not None:  # read before any write is queued: a read runs the queued writes
        found = await tx.fetchone("SELECT count(*) FROM history WHERE ladder = ? AND id >= ?",
                                  (ladder, differs))
        done.deleted += found[0] if found else 0
    await tx.executemany(UPDATE_VALUES, updates)
    await tx.executemany(DELETE_ROW, gone)
    if differs is not None:
        await tx.execute(DELETE_FROM, (ladder, differs))
    await tx.executemany(insert, history[k:])
    return done


def start_book(ladder: LadderConfig, book: Book, tail: Tail, units: Sequence[RatedUnit]
               ) -> Book:
    """A book holding what the tail's ``units`` need: every player's standing before them."""
    start = ladder.system.new_book(ladder.options)
    for unit in units:
        for game in unit.games:
            for player in game.players:
                if player in book.standings and player not in tail.before:
                    start.standings[player] = book.standings[player]
    for player, standing in tail.before.items():
        if standing is not None:
            start.standings[player] = standing
    return start


def corrected_book(ladder: LadderConfig, book: Book, tail: Tail, replayed: Book) -> Book:
    """``book`` with the tail's players as ``replayed`` left them (or gone, with no game left)."""
    out = ladder.system.new_book(ladder.options)
    out.standings = {p: s for p, s in book.standings.items() if p not in tail.before}
    out.standings.update(replayed.standings)
    return out
