"""FIBS as a rating system of the lobby: each finished match is a unit, rated at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from ratings_plugin.systems.fibs import (
    FibsOptions,
    FibsRating,
    rate_match,
    rate_ratings,
    win_probability,
)
from ratings_plugin.systems.fibs.replay import FibsReplay
from ratings_plugin.systems.fibs.standing import FibsLadder, FibsStanding
from server.api import BookBase, Column, Game, RatedUnit, RatingSystem, SystemBase
from server.api.rules import later, number


class FibsBook(BookBase[FibsLadder, FibsStanding]):
    def new_standing(self, player: str) -> FibsStanding:
        return FibsStanding(player, self.options.fibs.start_rating)

    def compute(self, unit: RatedUnit) -> dict[str, FibsStanding]:
        """A unit of one match (a live match, a result) in one step: the same standings, bit
        for bit, as the default's (:meth:`rate_game`, then the match and its day counted),
        made once each. Any other unit by the default."""
        if len(unit.games) != 1:
            return super().compute(unit)
        game = unit.games[0]
        system, options = self.system, self.options
        system.check_game(options, game)  # singles: one player a side
        if not system.counts(options, game):
            return {}
        (a,), (b,) = game.side_a, game.side_b
        sa, sb = self.standing(a), self.standing(b)
        length = game.length
        assert length is not None
        includes = options.fibs.experience_includes_match
        if game.a_won:
            ra, rb = rate_ratings(float(sa.rating), sa.experience, float(sb.rating),
                                  sb.experience, length, includes)
        else:
            rb, ra = rate_ratings(float(sb.rating), sb.experience, float(sa.rating),
                                  sa.experience, length, includes)
        day = game.played_on
        return {a: FibsStanding(sa.player, ra, sa.games + 1, later(sa.last_played, day),
                                sa.experience + length),
                b: FibsStanding(sb.player, rb, sb.games + 1, later(sb.last_played, day),
                                sb.experience + length)}

    def rate_game(self, game: Game, a: FibsStanding, b: FibsStanding
                  ) -> tuple[FibsStanding, FibsStanding]:
        assert game.length is not None
        va, vb = FibsRating(float(a.rating), a.experience), FibsRating(float(b.rating),
                                                                        b.experience)
        if game.a_won:
            na, nb = rate_match(va, vb, game.length, self.options.fibs)
        else:
            nb, na = rate_match(vb, va, game.length, self.options.fibs)
        return (replace(a, rating=na.rating, experience=na.experience),
                replace(b, rating=nb.rating, experience=nb.experience))


class Fibs(SystemBase[FibsLadder, FibsStanding]):
    """FIBS, with a fast replay of plain logs, tail corrections and closed-form stakes."""

    name = "fibs"
    title = "FIBS"
    live_matches = True
    rates_each_result = True
    match_lengths = True
    keys = frozenset({"experience_includes_match", "start_rating"})

    def read_options(self, table: Mapping[str, Any]) -> FibsLadder:
        includes = table.get("experience_includes_match", True)
        if not isinstance(includes, bool):
            raise ValueError("experience_includes_match must be true or false")
        return FibsLadder(fibs=FibsOptions(includes, number(table, "start_rating", 1500.0)))

    def new_book(self, options: FibsLadder) -> FibsBook:
        return FibsBook(self, options)

    def expectation(self, options: FibsLadder, a: FibsStanding, b: FibsStanding,
                    length: int | None) -> float:
        """FIBS's match-length formula (a game with no length as a 1-point match)."""
        return win_probability(float(a.rating), float(b.rating), length or 1)

    def columns(self, options: FibsLadder) -> Sequence[Column]:
        return (Column("rating", "Rating", "real", 2),
                Column("experience", "Experience", "integer",
                       help="The lengths of every rated match added up."),
                Column("games", "Matches", "integer"))

    def rewind(self, options: FibsLadder, s: FibsStanding, rating_before: float,
               last_played: date | None, lengths: Sequence[int | None]) -> FibsStanding:
        """Before a tail: history's first ``before``, less the tail's matches and lengths."""
        games = s.games - len(lengths)
        experience = s.experience - sum(n or 0 for n in lengths)
        if games < 0 or experience < 0:
            raise ValueError(f"{s.player}: the tail holds more than the standing")
        return replace(s, rating=rating_before, games=games, experience=experience,
                       last_played=last_played)

    def outcomes(self, options: FibsLadder, a: FibsStanding, b: FibsStanding, length: int,
                 day: date) -> tuple[float, float, float, float]:
        """A stake's two outcomes by :func:`rate_ratings`, the formula the book rates with."""
        includes = options.fibs.experience_includes_match
        ra, rb = float(a.rating), float(b.rating)
        a_won, b_lost = rate_ratings(ra, a.experience, rb, b.experience, length, includes)
        b_won, a_lost = rate_ratings(rb, b.experience, ra, a.experience, length, includes)
        return a_won - a.rating, a_lost - a.rating, b_won - b.rating, b_lost - b.rating

    def plain_replay(self, options: FibsLadder, ids: Mapping[str, int]) -> FibsReplay:
        return FibsReplay(options, ids)


SYSTEM: RatingSystem = Fibs()
