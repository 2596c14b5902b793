"""What a live match would put at stake: both ratings, each player's chance, each outcome's change.

The changes are what the ladder's own system would do now: the match is rated
twice (either player winning) by a fresh book holding the two players'
published standings, and neither result is accepted. A live match is a unit of
its two players alone, so nothing else of the ladder takes part. The chances
are the system's expectation, so every system that rates live matches offers
stakes with no code of its own.

A stake is shown with the invitation, its listing, the match and its summary:
:class:`Stakes` computes it once for the two standings it is made of.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from server.api import Book, Game, LadderConfig, LiveOutcomes, RatedUnit
from server.api.clock import moment
from server.api.systems import live_outcomes

STAKES_KEPT = 4096
"""The most stakes :class:`Stakes` keeps (a few hundred bytes each)."""

_StakeKey = tuple[str, str, str, int, str]
_Kept = tuple[LadderConfig, Any, Any, "dict[str, Any] | None"]


class Stakes:
    """Stakes computed once per pair of standings, not at every summary.

    A stake depends on nothing but the ladder, the two players' published standings, the
    length and the moment (the day, or the second for a system whose changes grow with time
    away). Standings are frozen: publishing a result, a correction, a reload or following
    another node's ratings puts new standing objects in their place. So a kept stake is
    used only while both standings it was computed from are still the published ones, by
    identity, and a rated result makes it stale by itself, on every node.
    """

    def __init__(self, kept: int = STAKES_KEPT) -> None:
        self._kept = kept
        self._stakes: dict[_StakeKey, _Kept] = {}

    def of(self, ladder: LadderConfig, published: Mapping[str, Any], a: str, b: str,
           length: int) -> dict[str, Any] | None:
        """The stake of a ``length``-point match of ``a`` against ``b`` now, or ``None`` when
        the ladder would not rate it. The same object while it holds: do not change it."""
        at, day = moment()
        closed = live_outcomes(ladder.system)
        # a system with closed-form outcomes says they change with the day alone
        key = (ladder.name, a, b, length, at[:10] if closed else at)
        sa, sb = published.get(a), published.get(b)
        kept = self._stakes.get(key)
        if kept is not None and kept[0] is ladder and kept[1] is sa and kept[2] is sb:
            return kept[3]
        game = Game((a,), (b,), 1, 0, day, length)
        found = (stake(ladder, published, a, b, length, at, day, closed)
                 if ladder.system.counts(ladder.options, game) else None)
        if kept is None and len(self._stakes) >= self._kept:
            del self._stakes[next(iter(self._stakes))]  # the oldest
        self._stakes[key] = (ladder, sa, sb, found)
        return found


def stake(ladder: LadderConfig, published: Mapping[str, Any], a: str, b: str, length: int,
          at: str, day: date, closed: LiveOutcomes | None) -> dict[str, Any]:
    """The stake of a ``length``-point match of ``a`` (first) against ``b`` on ``ladder``,
    played at ``at`` on ``day``: by the system's :class:`~server.api.LiveOutcomes`
    (``closed``, when it has them), else through its book."""
    system, options = ladder.system, ladder.options
    sa, sb = published.get(a), published.get(b)
    book = None
    if sa is None or sb is None or closed is None:
        book = system.new_book(options)
        sa = sa or book.new_standing(a)
        sb = sb or book.new_standing(b)
    if closed is not None:
        a_win, a_loss, b_win, b_loss = closed.outcomes(options, sa, sb, length, day)
    else:
        assert book is not None
        a_win, a_loss, b_win, b_loss = changes_by_book(ladder, book, sa, sb, length, at, day)
    return {"ladder": ladder.name, "length": length, "players": [
        {"player": a, "rating": sa.rating, "chance": system.expectation(options, sa, sb, length),
         "win": a_win, "loss": a_loss},
        {"player": b, "rating": sb.rating, "chance": system.expectation(options, sb, sa, length),
         "win": b_win, "loss": b_loss}]}


def changes_by_book(ladder: LadderConfig, book: Book, sa: Any, sb: Any, length: int, at: str,
                    day: date) -> tuple[float, float, float, float]:
    """:meth:`~server.api.LiveOutcomes.outcomes` for any system: the match rated both ways
    by ``book`` (an empty one) holding the two standings, neither result accepted."""
    a, b = sa.player, sb.player
    book.standings.update({a: sa, b: sb})
    after: dict[str, dict[str, Any]] = {}
    for winner in (a, b):
        score = (1, 0) if winner == a else (0, 1)
        game = Game((a,), (b,), *score, day, length)
        after[winner] = book.compute(RatedUnit(ladder.name, 0, at, (game,), {}))
    return (after[a][a].rating - sa.rating, after[b][a].rating - sa.rating,
            after[b][b].rating - sb.rating, after[a][b].rating - sb.rating)
