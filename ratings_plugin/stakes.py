"""What a live match would put at stake: both ratings, each player's chance, each outcome's change.

The changes are what the ladder's own system would do now: the match is rated
twice (either player winning) by a fresh book holding the two players'
published standings, and neither result is accepted. A live match is a unit of
its two players alone, so nothing else of the ladder takes part. The chances
are the system's expectation, so every system that rates live matches offers
stakes with no code of its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ratings_plugin.book import today
from server.api import Game, LadderConfig, RatedUnit


def stake(ladder: LadderConfig, published: Mapping[str, Any], a: str, b: str, length: int
          ) -> dict[str, Any]:
    """The stake of a ``length``-point match of ``a`` (first) against ``b`` on ``ladder``."""
    system, options = ladder.system, ladder.options
    book = system.new_book(options)
    before = {p: published.get(p) or book.new_standing(p) for p in (a, b)}
    book.standings.update(before)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    day = today()
    after: dict[str, dict[str, Any]] = {}
    for winner in (a, b):
        score = (1, 0) if winner == a else (0, 1)
        game = Game((a,), (b,), *score, day, length)
        after[winner] = book.compute(RatedUnit(ladder.name, 0, at, (game,), {}))
    players = []
    for me, other in ((a, b), (b, a)):
        mine = before[me]
        players.append({
            "player": me,
            "rating": mine.rating,
            "chance": system.expectation(options, mine, before[other], length),
            "win": after[me][me].rating - mine.rating,
            "loss": after[other][me].rating - mine.rating,
        })
    return {"ladder": ladder.name, "length": length, "players": players}
