"""FIBS as a rating system of the lobby: each finished match is a unit, rated at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from ratings_plugin.systems import common
from ratings_plugin.systems.fibs import FibsOptions, FibsRating, rate_match, win_probability
from ratings_plugin.systems.fibs.replay import FibsReplay
from ratings_plugin.systems.fibs.standing import FibsLadder, FibsStanding
from server.api import Column, Game, RatedUnit, RatingSystem, StoredStanding

KEYS = frozenset({"experience_includes_match", "start_rating"}) | common.COMMON_KEYS


def _played(s: FibsStanding, after: FibsRating, when: date) -> FibsStanding:
    """``s`` after one more match (one copy: a live match makes two per result)."""
    last = when if s.last_played is None else max(s.last_played, when)
    return replace(s, rating=after.rating, experience=after.experience, games=s.games + 1,
                   last_played=last)


class FibsBook:
    def __init__(self, options: FibsLadder) -> None:
        self.options = options
        self.standings: dict[str, FibsStanding] = {}

    def new_standing(self, player: str) -> FibsStanding:
        return FibsStanding(player, self.options.fibs.start_rating)

    def get(self, player: str) -> FibsStanding:
        return self.standings.get(player) or self.new_standing(player)

    def compute(self, unit: RatedUnit) -> dict[str, FibsStanding]:
        """The matches of ``unit`` applied one after the other."""
        for g in unit.games:
            SYSTEM.check_game(self.options, g)
        work: dict[str, FibsStanding] = {}
        opts = self.options.fibs
        for g in unit.games:
            if not SYSTEM.counts(self.options, g):
                continue
            a, b = g.side_a[0], g.side_b[0]
            sa, sb = work.get(a) or self.get(a), work.get(b) or self.get(b)
            assert g.length is not None
            va, vb = FibsRating(float(sa.rating), sa.experience), FibsRating(float(sb.rating),
                                                                              sb.experience)
            if g.a_won:
                na, nb = rate_match(va, vb, g.length, opts)
            else:
                nb, na = rate_match(vb, va, g.length, opts)
            work[a] = _played(sa, na, g.played_on)
            work[b] = _played(sb, nb, g.played_on)
        return work

    def accept(self, new: Mapping[str, FibsStanding], unit: RatedUnit) -> None:
        self.standings.update(new)

    def predict(self, game: Game) -> float:
        """FIBS's match-length formula (a game with no length as a 1-point match)."""
        a, b = self.get(game.side_a[0]), self.get(game.side_b[0])
        return win_probability(float(a.rating), float(b.rating), game.length or 1)

    def load_history(self, games: Sequence[tuple[str, str, int, int]]) -> None:
        """Nothing to load: no part of this system depends on the whole history."""


class Fibs:
    name = "fibs"
    title = "FIBS"
    live_matches = True
    rates_each_result = True
    tail_corrections = True
    match_lengths = True
    shared_field: str | None = None

    def option_keys(self) -> frozenset[str]:
        return KEYS

    def parse_options(self, table: Mapping[str, Any]) -> FibsLadder:
        common.doubles(table, False, self.title)
        includes = table.get("experience_includes_match", True)
        if not isinstance(includes, bool):
            raise ValueError("experience_includes_match must be true or false")
        return FibsLadder(FibsOptions(includes, common.number(table, "start_rating", 1500.0)),
                          common.inactivity_days(table))

    def doubles(self, options: FibsLadder) -> bool:
        return False

    def new_book(self, options: FibsLadder) -> FibsBook:
        return FibsBook(options)

    def check_game(self, options: FibsLadder, game: Game) -> None:
        common.check_sides(game, 1, "singles")
        common.no_draws(game, self.name)

    def counts(self, options: FibsLadder, game: Game) -> bool:
        return game.unrated_reason is None and game.length is not None

    def initial_rating(self, options: FibsLadder) -> float:
        return options.fibs.start_rating

    def columns(self, options: FibsLadder) -> Sequence[Column]:
        return (Column("rating", "Rating", "real", 2),
                Column("experience", "Experience", "integer",
                       help="The lengths of every rated match added up."),
                Column("games", "Matches", "integer"))

    def row(self, options: FibsLadder, s: FibsStanding, active: bool) -> dict[str, Any]:
        return {"rating": float(s.rating), "games": s.games, "active": active,
                "experience": s.experience}

    def is_active(self, options: FibsLadder, s: FibsStanding, as_of: date | None) -> bool:
        return common.is_active(options.inactivity_days, s.last_played, as_of)

    def order(self, s: FibsStanding) -> float:
        return s.rating

    def expectation(self, options: FibsLadder, a: FibsStanding, b: FibsStanding,
                    length: int | None) -> float:
        return win_probability(float(a.rating), float(b.rating), length or 1)

    def encode(self, s: FibsStanding) -> StoredStanding:
        return StoredStanding(float(s.rating), s.games, common.iso(s.last_played),
                              {"experience": s.experience})

    def decode(self, options: FibsLadder, player: str, stored: StoredStanding) -> FibsStanding:
        return FibsStanding(player, stored.rating, stored.games,
                            common.from_iso(stored.last_played),
                            int(stored.state.get("experience", 0)))

    def rewind(self, options: FibsLadder, s: FibsStanding, rating_before: float,
               last_played: date | None, lengths: Sequence[int | None]) -> FibsStanding:
        """Before a tail: history's first ``before``, less the tail's matches and lengths."""
        games = s.games - len(lengths)
        experience = s.experience - sum(n or 0 for n in lengths)
        if games < 0 or experience < 0:
            raise ValueError(f"{s.player}: the tail holds more than the standing")
        return replace(s, rating=rating_before, games=games, experience=experience,
                       last_played=last_played)

    def plain_replay(self, options: FibsLadder, ids: Mapping[str, int]) -> FibsReplay:
        return FibsReplay(options, ids)


SYSTEM: RatingSystem = Fibs()
