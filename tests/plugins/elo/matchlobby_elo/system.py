"""Plain Elo: after each game both players move by K × (score − expected score).

Only the core of a rating system: its options, a newcomer's standing, the
rating of one game and the expectation. Everything else (the standing's
storage, the ladder's rows and order, inactivity, the side checks, unrated
and unlimited games, ``book.predict``) is the base class's default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from server.api import BookBase, Game, LadderOptions, StandingBase, SystemBase, rules


@dataclass(frozen=True)
class EloOptions(LadderOptions):
    k: float = 32.0
    start_rating: float = 1500.0


def expected(own: float, other: float) -> float:
    """The expected score of a player rated ``own`` against one rated ``other``."""
    return 1.0 / (1.0 + math.pow(10.0, (other - own) / 400.0))


class EloBook(BookBase[EloOptions, StandingBase]):
    def new_standing(self, player: str) -> StandingBase:
        return StandingBase(player, self.options.start_rating)

    def rate_game(self, game: Game, a: StandingBase, b: StandingBase
                  ) -> tuple[StandingBase, StandingBase]:
        change = self.options.k * ((1.0 if game.a_won else 0.0) - expected(a.rating, b.rating))
        return replace(a, rating=a.rating + change), replace(b, rating=b.rating - change)


class Elo(SystemBase[EloOptions, StandingBase]):
    name = "elo"
    title = "Elo"
    live_matches = True
    rates_each_result = True
    keys = frozenset({"k", "start_rating"})

    def read_options(self, table: Mapping[str, Any]) -> EloOptions:
        k = rules.number(table, "k", 32.0)
        if not k > 0:
            raise ValueError("k must be positive")
        return EloOptions(k=k, start_rating=rules.number(table, "start_rating", 1500.0))

    def new_book(self, options: EloOptions) -> EloBook:
        return EloBook(self, options)

    def expectation(self, options: EloOptions, a: StandingBase, b: StandingBase,
                    length: int | None) -> float:
        return expected(a.rating, b.rating)


SYSTEM = Elo()
