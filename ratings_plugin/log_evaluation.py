"""A ladder's evaluation read from its log through a :class:`~server.api.Reader`: what
``matchlobby evaluate --ladder`` prints (on either backend) and the lobby command ``evaluate``
answers.

The log is read in pages, never whole: from its plain rows (:class:`PlainRun`) when every
system evaluated offers plain predictions and the ladder has no event units, else as units
through the books (:class:`BooksRun`). Every page is bounded by the ``seq`` the log stood at
when the read began, and a ladder's ``seq`` is drawn under its hold, so no unit committed
meanwhile is half seen. The reader pays once for each row read (``charge``), even when the
plain rows turn out not to be plain and the books take over.

An :class:`Evaluation` can be carried on: given the one made at an earlier ask, only the units
rated since are read and fed to it; a correction (a void, an adjudication) changes the past,
so then it starts over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ratings_plugin.commands.replay import MATCH_LOG
from ratings_plugin.evaluation.plain import Entry, PlainRun
from ratings_plugin.evaluation.report import BooksRun
from server.api import LogRow, NotPlain, Reader

LOG_STATE = """SELECT (SELECT max(seq) FROM matches WHERE ladder = ?),
    (SELECT max(seq) FROM events WHERE ladder = ? AND status = 'closed'),
    (SELECT count(*) FROM corrections c JOIN matches m ON m.id = c.match_id
     WHERE m.ladder = ?),
    (SELECT max(c.id) FROM corrections c JOIN matches m ON m.id = c.match_id
     WHERE m.ladder = ?)"""
"""Where the ladder's log stands: its last rated match and closed event, and how many
corrections it has had with the last one's id. The count sees every committed correction
whatever order their ids were drawn in (on PostgreSQL two nodes may commit them out of id
order); the id, one deleted and another added."""

PAGE_ROWS = 20_000
"""Plain rows read and evaluated at a time (a few MB)."""

LOG_PAGE = MATCH_LOG.replace("played_on, unrated_reason", "played_on, unrated_reason, seq"
                             ).replace("ORDER BY seq", "AND seq > ? AND seq <= ? ORDER BY seq "
                                                       "LIMIT ?")
"""A page of :data:`~ratings_plugin.commands.replay.MATCH_LOG` with each row's ``seq`` last."""
PAGE_UNITS = 5_000
"""Units read and evaluated at a time through the books (an event's unit holds many games)."""
PAGE_END = """SELECT seq FROM (SELECT seq FROM matches WHERE ladder = ? AND seq > ? AND seq <= ?
    AND status = 'finished' UNION ALL SELECT seq FROM events WHERE ladder = ? AND seq > ?
    AND seq <= ? AND status = 'closed') AS units ORDER BY seq LIMIT 1 OFFSET ?"""
"""The ``seq`` of the last unit of a page (none: the page runs to the end)."""
PLAYERS_AFTER = "SELECT id, name FROM players WHERE id > ?"

Charge = Callable[[int], None]


@dataclass
class Evaluation:
    """A ladder's evaluation as far as its log has been read."""

    entries: Sequence[Entry]
    run: PlainRun | BooksRun
    seq: int
    """Every unit up to this ``seq`` has been fed, none after."""
    corrections: tuple[Any, ...]
    """The corrections' marker read before its first row: one committed since, even while it
    was read, moves the marker, and the next ask starts over."""
    ids: dict[str, int]
    """The players it knows (a plain run's replays hold this mapping and see it grow)."""

    reported: tuple[int, dict[str, Any]] | None = None

    def report(self) -> dict[str, Any]:
        """The report of the log up to :attr:`seq` (worked out once for each ``seq``)."""
        if self.reported is None or self.reported[0] != self.seq:
            self.reported = (self.seq, self.run.report())
        return self.reported[1]


class _Paid:
    """What one ask has charged for the log's rows (not its players), so that books taking
    over from a plain read charge only the rest."""

    def __init__(self, charge: Charge) -> None:
        self.charge = charge
        self.rows = 0

    def players(self, n: int) -> None:
        self.charge(n)

    def log(self, n: int) -> None:
        self.charge(n)
        self.rows += n


async def evaluation(reader: Reader, name: str, entries: Sequence[Entry], charge: Charge,
                     kept: Evaluation | None = None) -> Evaluation:
    """The evaluation of ladder ``name``'s committed log for ``entries``: ``kept`` carried on
    with the units rated since it was made when it was made for the same entries and no
    correction came since, else a new one. ``kept`` may be changed (do not use it again).
    Raises ``ValueError`` when a book refuses a game (the ladder's options, since changed,
    refuse its log)."""
    paid = _Paid(charge)
    last, events, corrections = await _state(reader, name)
    if kept is not None and kept.corrections == corrections and kept.entries == entries:
        plain = isinstance(kept.run, PlainRun)
        if kept.seq < last and not (plain and events):
            try:
                await _carry_on(reader, name, kept, last, paid)
                return kept
            except NotPlain:  # a row plain replays refuse: the books from the start
                pass
        elif kept.seq >= last:
            return kept
        return await _books(reader, name, entries, last, corrections, paid, kept.ids)
    ids: dict[str, int] = {}  # the plain replays keep this mapping: it is filled in place
    new: Evaluation | None = None
    run = None if events else PlainRun.start(entries, ids)
    if run is not None:  # only plain rows need the players' ids
        await _more_players(reader, ids, paid)
        new = Evaluation(entries, run, 0, corrections, ids)
        try:
            await _plain_rows(reader, name, new, run, last, paid)
        except NotPlain:
            new = None
    if new is None:
        new = await _books(reader, name, entries, last, corrections, paid, ids)
    return new


async def _state(reader: Reader, name: str) -> tuple[int, bool, tuple[Any, ...]]:
    """The log's last ``seq``, whether it has event units, and its corrections' marker."""
    row = await reader.fetchone(LOG_STATE, (name, name, name, name))
    matches, events, count, last_id = tuple(row) if row is not None else (None,) * 4
    return max(matches or 0, events or 0), events is not None, (count, last_id)


async def _more_players(reader: Reader, ids: dict[str, int], paid: _Paid) -> None:
    rows = await reader.fetchall(PLAYERS_AFTER, (max(ids.values(), default=0),))
    paid.players(len(rows))
    for pid, player in rows:
        ids[player] = pid


async def _plain_rows(reader: Reader, name: str, found: Evaluation, run: PlainRun, last: int,
                      paid: _Paid) -> None:
    """Feed ``run`` (``found``'s) the rows after ``found.seq`` up to ``last``. Raises
    :class:`~server.api.NotPlain` as the run does."""
    while found.seq < last:
        page = await reader.fetchall(LOG_PAGE, (name, found.seq, last, PAGE_ROWS))
        if not page:
            break
        paid.log(len(page))
        rows = [cast(LogRow, tuple(row)[:10]) for row in page]
        await asyncio.to_thread(run.feed, rows)
        found.seq = page[-1][10]
    found.seq = last


async def _books(reader: Reader, name: str, entries: Sequence[Entry], last: int,
                 corrections: tuple[Any, ...], paid: _Paid, ids: dict[str, int]
                 ) -> Evaluation:
    """A new evaluation through the books, of every unit up to ``last``; the rows a plain read
    of this ask already paid for are not charged again."""
    found = Evaluation(entries, BooksRun(entries), 0, corrections, ids)
    credit = paid.rows

    def charge(games: int) -> None:
        nonlocal credit
        used = min(credit, games)
        credit -= used
        paid.log(games - used)

    await _units(reader, name, found, last, charge)
    return found


async def _carry_on(reader: Reader, name: str, kept: Evaluation, last: int,
                    paid: _Paid) -> None:
    """Feed ``kept`` the units after its ``seq`` up to ``last``."""
    if isinstance(kept.run, PlainRun):
        await _more_players(reader, kept.ids, paid)
        await _plain_rows(reader, name, kept, kept.run, last, paid)
    else:
        await _units(reader, name, kept, last, paid.log)


async def _units(reader: Reader, name: str, found: Evaluation, last: int,
                 charge: Charge) -> None:
    """Feed ``found``'s books the units after its ``seq`` up to ``last``, a page of
    :data:`PAGE_UNITS` at a time (``charge``: each page's games)."""
    run = found.run
    assert isinstance(run, BooksRun)
    while found.seq < last:
        bound = await reader.fetchone(PAGE_END, (name, found.seq, last, name, found.seq, last,
                                                 PAGE_UNITS - 1))
        end = last if bound is None else bound[0]
        units = await reader.log.units(name, found.seq + 1, end)
        charge(sum(len(u.games) for u in units))
        await asyncio.to_thread(run.feed, units)
        found.seq = end
