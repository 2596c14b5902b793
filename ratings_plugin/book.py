"""Ladders in memory: a configured ladder's book, the changes a unit makes, the ranked rows.

``matchlobby rate``, the lobby's event close, a correction and ``matchlobby
replay`` all apply units through :func:`rate_unit`, so they can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from server.api import Book, LadderConfig, RatedUnit
from server.api.clock import moment


def today() -> date:
    """Today's date in UTC, the lobby's calendar."""
    return moment()[1]


HistoryRow = tuple[str, int, float | None, float, int | None, int | None, str]
"""ladder, player id, before, after, match id, event id, at: one row of ``history``."""


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


def rate_unit(ladder: LadderConfig, book: Book, unit: RatedUnit
              ) -> tuple[dict[str, Any], list[Change]]:
    """What one unit does to ``book`` (not yet accepted); the changes become history rows.

    A player gets a history row when they played in the unit or their shown
    rating moved (ČAS normalisation moves non-players too). A newcomer's
    ``before`` is the system's initial rating (``None`` when it has none).
    """
    system, options = ladder.system, ladder.options
    standings = book.standings  # compute() leaves the book as it is
    new = book.compute(unit)
    played = {p for g in unit.games if system.counts(options, g) for p in g.players}
    # A whole-ladder close returns every player; most of them keep their shown rating.
    candidates = [p for p, s in new.items()
                  if p in played or (o := standings.get(p)) is None or o.rating != s.rating]
    changes: list[Change] = []
    cause = unit.cause  # made afresh on each access; the changes of one unit share it
    initial = system.initial_rating(options)
    for player in sorted(candidates, key=str.casefold):
        s = new[player]
        old = standings.get(player)
        before = initial if old is None else old.rating
        if player in played or before != s.rating:
            changes.append(Change(player, before, s.rating, cause))
    return new, changes


def history_rows(ladder: str, unit: RatedUnit, changes: Sequence[Change],
                 ids: Mapping[str, int]) -> list[HistoryRow]:
    return [(ladder, ids[c.player], c.before, float(c.after), unit.match_id, unit.event_id, unit.at)
            for c in changes]


def replay_ladder(ladder: LadderConfig, units: Iterable[RatedUnit], ids: Mapping[str, int],
                  book: Book | None = None) -> tuple[Book, list[HistoryRow]]:
    """A ladder rebuilt from its log (or ``units`` applied to ``book``, which is changed): the
    book and every history row, in order."""
    if book is None:
        book = ladder.system.new_book(ladder.options)
    history: list[HistoryRow] = []
    for unit in units:
        new, changes = rate_unit(ladder, book, unit)
        book.accept(new, unit)
        history.extend(history_rows(ladder.name, unit, changes, ids))
    return book, history


def ranked_rows(ladder: LadderConfig, standings: Iterable[Any], as_of: date | None
                ) -> list[dict[str, Any]]:
    """The published ladder: players with a rated game, active first, by the system's order,
    equal values sharing a rank (1, 2, 2, 4)."""
    system, options = ladder.system, ladder.options
    entries = [(s, system.is_active(options, s, as_of), system.order(s))
               for s in standings if s.games > 0]
    entries.sort(key=lambda e: (not e[1], -e[2], e[0].player.casefold()))
    total = len(entries)
    rows: list[dict[str, Any]] = []
    rank = 0
    previous: tuple[bool, float] | None = None
    for i, (s, active, value) in enumerate(entries, start=1):
        if previous != (active, value):
            rank, previous = i, (active, value)
        rows.append({"rank": rank, "of": total, "player": s.player,
                     **system.row(options, s, active)})
    return rows
