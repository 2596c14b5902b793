"""P4P table-football Elo (RATINGS.md §2): a tournament is rated as one batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

from ratings_plugin.systems.rounding import round_to_decimal, round_to_int

CLASSES: tuple[tuple[str, int], ...] = (
    ("Newcomer", 0),
    ("Amateur", 500),
    ("Master", 1000),
    ("Elite", 1500),
)
CLASS_START = {"Newcomer": 250, "Amateur": 750, "Master": 1250, "Elite": 1750}


@dataclass(frozen=True, slots=True)
class P4PRating:
    """Integer points and the number of rated games played in the ladder."""

    points: int
    games: int = 0


@dataclass(frozen=True, slots=True)
class P4POptions:
    """Per-ladder settings. K is chosen by games played *before* the tournament."""

    f: int = 800
    k_thresholds: tuple[int, ...] = (30, 100)
    k_values: tuple[int, ...] = (80, 50, 30)
    start_class: str = "Newcomer"
    floor: int | None = None

    def __post_init__(self) -> None:
        if len(self.k_values) != len(self.k_thresholds) + 1:
            raise ValueError("k_values needs exactly one more entry than k_thresholds")
        if list(self.k_thresholds) != sorted(self.k_thresholds):
            raise ValueError("k_thresholds must be increasing")
        if self.start_class not in CLASS_START:
            raise ValueError(f"unknown start class {self.start_class!r}")
        if self.f <= 0:
            raise ValueError("f must be positive")

    @property
    def start_points(self) -> int:
        return CLASS_START[self.start_class]


@dataclass(frozen=True, slots=True)
class P4PGame:
    """One rated game: each side is one player (singles) or two (doubles)."""

    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    a_won: bool
    players: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "players", self.side_a + self.side_b)


def player_class(points: int) -> str:
    """The class a player's points fall in (below 0 is still Newcomer)."""
    name = CLASSES[0][0]
    for cls, lower in CLASSES:
        if points >= lower:
            name = cls
    return name


def k_factor(games_before: int, options: P4POptions = P4POptions()) -> int:
    for threshold, k in zip(options.k_thresholds, options.k_values, strict=False):
        if games_before < threshold:
            return k
    return options.k_values[-1]


def expected_score(difference: Fraction | int, f: int = 800) -> Decimal:
    """GW = 1 / (10^(−D/F) + 1), rounded half away from zero to two decimals.

    Evaluated in 40-digit decimal arithmetic so the rounding decision never
    depends on binary floating point.
    """
    d = Fraction(difference)
    with localcontext() as ctx:
        ctx.prec = 40
        exponent = -Decimal(d.numerator) / Decimal(d.denominator) / Decimal(f)
        value = Decimal(1) / (Decimal(10) ** exponent + Decimal(1))
    return round_to_decimal(value, 2)


def side_rating(side: Sequence[str], points: Mapping[str, int]) -> Fraction:
    """A side's rating: the player's points, or the partners' mean in doubles."""
    return Fraction(sum(points[p] for p in side), len(side))


def game_changes(
    game: P4PGame, before: Mapping[str, P4PRating], options: P4POptions = P4POptions()
) -> dict[str, int]:
    """Each player's rounded change from one game, from pre-tournament values."""
    pts = {p: before[p].points for p in game.players}
    diff = side_rating(game.side_a, pts) - side_rating(game.side_b, pts)
    changes: dict[str, int] = {}
    for side, sign, won in ((game.side_a, 1, game.a_won), (game.side_b, -1, not game.a_won)):
        gw = expected_score(sign * diff, options.f)
        result = Decimal(1 if won else 0)
        for p in side:
            k = k_factor(before[p].games, options)
            changes[p] = round_to_int(Decimal(k) * (result - gw))
    return changes


def rate_event(
    ratings: Mapping[str, P4PRating],
    games: Iterable[P4PGame],
    options: P4POptions = P4POptions(),
) -> dict[str, P4PRating]:
    """New ratings of every player in ``games`` after the tournament closes.

    Every game uses the points all players had before the tournament; the
    per-game changes are summed and added at the end, so game order is
    irrelevant. Players absent from ``ratings`` start at the ladder's start
    class.
    """
    games = list(games)
    before: dict[str, P4PRating] = {}
    for g in games:
        for p in g.players:
            if p not in before:
                before[p] = ratings.get(p) or P4PRating(options.start_points, 0)
    total = dict.fromkeys(before, 0)
    played = dict.fromkeys(before, 0)
    for g in games:
        for p, change in game_changes(g, before, options).items():
            total[p] += change
            played[p] += 1
    after: dict[str, P4PRating] = {}
    for p, old in before.items():
        points = old.points + total[p]
        if options.floor is not None:
            points = max(points, options.floor)
        after[p] = P4PRating(points, old.games + played[p])
    return after
