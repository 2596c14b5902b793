"""P4P Elo as a rating system of the lobby: an event is one unit, rated when it closes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from ratings_plugin.systems import common
from ratings_plugin.systems.p4p import (
    P4PGame,
    P4POptions,
    P4PRating,
    expected_score,
    player_class,
    rate_event,
    side_rating,
)
from server.api import Column, Game, RatedUnit, RatingSystem, StoredStanding

KEYS = frozenset({"format", "k_thresholds", "k_values", "start_class", "floor", "f"}) \
    | common.COMMON_KEYS


@dataclass(frozen=True)
class P4PLadder:
    p4p: P4POptions = field(default_factory=P4POptions)
    doubles: bool = False
    inactivity_days: int | None = common.DEFAULT_INACTIVITY_DAYS


@dataclass(frozen=True, slots=True)
class P4PStanding:
    """A player's points and rated games on one ladder."""

    player: str
    rating: int
    games: int = 0
    last_played: date | None = None


class P4PBook:
    def __init__(self, options: P4PLadder) -> None:
        self.options = options
        self.standings: dict[str, P4PStanding] = {}

    def new_standing(self, player: str) -> P4PStanding:
        return P4PStanding(player, self.options.p4p.start_points)

    def get(self, player: str) -> P4PStanding:
        return self.standings.get(player) or self.new_standing(player)

    def compute(self, unit: RatedUnit) -> dict[str, P4PStanding]:
        """Every game from the points before the event; the changes added at its end."""
        for g in unit.games:
            SYSTEM.check_game(self.options, g)
        games = [g for g in unit.games if SYSTEM.counts(self.options, g)]
        if not games:
            return {}
        before = {p: P4PRating(int(self.get(p).rating), self.get(p).games)
                  for g in games for p in g.players}
        after = rate_event(before, (P4PGame(g.side_a, g.side_b, g.a_won) for g in games),
                           self.options.p4p)
        last = common.last_dates(games)
        out: dict[str, P4PStanding] = {}
        for p, r in after.items():
            s = self.get(p)
            out[p] = replace(s, rating=r.points, games=r.games,
                             last_played=common.later(s.last_played, last[p]))
        return out

    def accept(self, new: Mapping[str, P4PStanding], unit: RatedUnit) -> None:
        self.standings.update(new)

    def predict(self, game: Game) -> float:
        """P4P's expected score of side A (a doubles side rated by its partners' mean)."""
        points = {p: int(self.get(p).rating) for p in game.players}
        diff = side_rating(game.side_a, points) - side_rating(game.side_b, points)
        return float(expected_score(diff, self.options.p4p.f))


def _ints(table: Mapping[str, Any], key: str, default: tuple[int, ...]) -> tuple[int, ...]:
    value = table.get(key, default)
    if not isinstance(value, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{key} must be a list of whole numbers")
    return tuple(value)


class P4P:
    name = "p4p"
    title = "P4P"
    live_matches = False
    rates_each_result = False
    tail_corrections = False
    match_lengths = False
    shared_field: str | None = None

    def option_keys(self) -> frozenset[str]:
        return KEYS

    def parse_options(self, table: Mapping[str, Any]) -> P4PLadder:
        floor = table.get("floor")
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int)):
            raise ValueError("floor must be a whole number")
        start_class = table.get("start_class", "Newcomer")
        if not isinstance(start_class, str):
            raise ValueError("start_class must be a class name")
        options = P4POptions(f=common.whole(table, "f", 800),
                             k_thresholds=_ints(table, "k_thresholds", (30, 100)),
                             k_values=_ints(table, "k_values", (80, 50, 30)),
                             start_class=start_class, floor=floor)
        return P4PLadder(options, common.doubles(table, True, self.title),
                         common.inactivity_days(table))

    def doubles(self, options: P4PLadder) -> bool:
        return options.doubles

    def new_book(self, options: P4PLadder) -> P4PBook:
        return P4PBook(options)

    def check_game(self, options: P4PLadder, game: Game) -> None:
        common.check_sides(game, 2 if options.doubles else 1,
                           "doubles" if options.doubles else "singles")
        common.no_draws(game, self.name)

    def counts(self, options: P4PLadder, game: Game) -> bool:
        return game.unrated_reason is None

    def initial_rating(self, options: P4PLadder) -> float:
        return options.p4p.start_points

    def columns(self, options: P4PLadder) -> Sequence[Column]:
        return (Column("rating", "Points", "integer"),
                Column("class", "Class", "text",
                       help="Newcomer below 500 points, Amateur below 1000, Master below 1500, "
                            "then Elite."),
                Column("games", "Games", "integer"))

    def row(self, options: P4PLadder, s: P4PStanding, active: bool) -> dict[str, Any]:
        points = int(s.rating)
        return {"rating": points, "games": s.games, "active": active,
                "class": player_class(points)}

    def is_active(self, options: P4PLadder, s: P4PStanding, as_of: date | None) -> bool:
        return common.is_active(options.inactivity_days, s.last_played, as_of)

    def order(self, s: P4PStanding) -> float:
        return s.rating

    def expectation(self, options: P4PLadder, a: P4PStanding, b: P4PStanding,
                    length: int | None) -> float:
        points = {"a": int(a.rating), "b": int(b.rating)}
        diff = side_rating(("a",), points) - side_rating(("b",), points)
        return float(expected_score(diff, options.p4p.f))

    def encode(self, s: P4PStanding) -> StoredStanding:
        return StoredStanding(float(s.rating), s.games, common.iso(s.last_played), {})

    def decode(self, options: P4PLadder, player: str, stored: StoredStanding) -> P4PStanding:
        return P4PStanding(player, int(stored.rating), stored.games,
                           common.from_iso(stored.last_played))


SYSTEM: RatingSystem = P4P()
