"""P4P Elo as a rating system of the lobby: an event is one unit, rated when it closes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ratings_plugin.systems.p4p import (
    P4PGame,
    P4POptions,
    P4PRating,
    expected_score,
    player_class,
    rate_event,
    side_rating,
)
from server.api import (
    BookBase,
    Column,
    Game,
    LadderOptions,
    RatedUnit,
    RatingSystem,
    StandingBase,
    SystemBase,
)
from server.api.rules import last_dates, later, whole


@dataclass(frozen=True)
class P4PLadder(LadderOptions):
    p4p: P4POptions = field(default_factory=P4POptions)


@dataclass(frozen=True, slots=True)
class P4PStanding(StandingBase):
    """A player's points and rated games on one ladder."""

    rating: int


class P4PBook(BookBase[P4PLadder, P4PStanding]):
    def new_standing(self, player: str) -> P4PStanding:
        return P4PStanding(player, self.options.p4p.start_points)

    def compute(self, unit: RatedUnit) -> dict[str, P4PStanding]:
        """Every game from the points before the event; the changes added at its end."""
        system, ladder = self.system, self.options
        for g in unit.games:
            system.check_game(ladder, g)
        games = [g for g in unit.games if system.counts(ladder, g)]
        if not games:
            return {}
        get = self.standing
        before = {p: P4PRating(int(get(p).rating), get(p).games)
                  for g in games for p in g.players}
        after = rate_event(before, (P4PGame(g.side_a, g.side_b, g.a_won) for g in games),
                           ladder.p4p)
        last = last_dates(games)
        out: dict[str, P4PStanding] = {}
        for p, r in after.items():
            s = get(p)
            out[p] = replace(s, rating=r.points, games=r.games,
                             last_played=later(s.last_played, last[p]))
        return out

    def predict(self, game: Game) -> float:
        """P4P's expected score of side A (a doubles side rated by its partners' mean)."""
        points = {p: int(self.standing(p).rating) for p in game.players}
        diff = side_rating(game.side_a, points) - side_rating(game.side_b, points)
        return float(expected_score(diff, self.options.p4p.f))


def _ints(table: Mapping[str, Any], key: str, default: tuple[int, ...]) -> tuple[int, ...]:
    value = table.get(key, default)
    if not isinstance(value, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{key} must be a list of whole numbers")
    return tuple(value)


class P4P(SystemBase[P4PLadder, P4PStanding]):
    name = "p4p"
    title = "P4P"
    doubles_allowed = True
    keys = frozenset({"k_thresholds", "k_values", "start_class", "floor", "f"})

    def read_options(self, table: Mapping[str, Any]) -> P4PLadder:
        floor = table.get("floor")
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int)):
            raise ValueError("floor must be a whole number")
        start_class = table.get("start_class", "Newcomer")
        if not isinstance(start_class, str):
            raise ValueError("start_class must be a class name")
        return P4PLadder(p4p=P4POptions(f=whole(table, "f", 800),
                                        k_thresholds=_ints(table, "k_thresholds", (30, 100)),
                                        k_values=_ints(table, "k_values", (80, 50, 30)),
                                        start_class=start_class, floor=floor))

    def new_book(self, options: P4PLadder) -> P4PBook:
        return P4PBook(self, options)

    def expectation(self, options: P4PLadder, a: P4PStanding, b: P4PStanding,
                    length: int | None) -> float:
        points = {"a": int(a.rating), "b": int(b.rating)}
        diff = side_rating(("a",), points) - side_rating(("b",), points)
        return float(expected_score(diff, options.p4p.f))

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


SYSTEM: RatingSystem = P4P()
