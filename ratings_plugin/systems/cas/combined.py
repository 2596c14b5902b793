"""The ČAS ladder strength (RATINGS.md §3.5): the three methods normalised and averaged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from ratings_plugin.systems.cas import dansa, paluba
from ratings_plugin.systems.cas.dansa import DansaRating
from ratings_plugin.systems.rounding import round_to_int


@dataclass(frozen=True, slots=True)
class CasGame:
    """One ČAS game: both players and both scores (non-negative integers)."""

    player_a: str
    player_b: str
    score_a: int
    score_b: int

    def as_tuple(self) -> tuple[str, str, int, int]:
        return (self.player_a, self.player_b, self.score_a, self.score_b)


@dataclass(frozen=True, slots=True)
class CasRating:
    """A published ladder entry: the combined strength and its three components."""

    strength: int
    paluba: int
    dansa: int
    peklo: float


@dataclass
class CasState:
    """The stateful parts of the ladder; Peklo has no state of its own."""

    paluba: dict[str, int] = field(default_factory=dict)
    dansa: dict[str, DansaRating] = field(default_factory=dict)


def rate_event(state: CasState, games: Iterable[CasGame]) -> CasState:
    """Paluba and Dansa after one event, every game judged by pre-event values."""
    rows = [g.as_tuple() for g in games]
    new_paluba = dict(state.paluba)
    new_paluba.update(paluba.rate_event(state.paluba, rows))
    new_dansa = dict(state.dansa)
    new_dansa.update(dansa.rate_event(state.dansa, rows))
    return CasState(new_paluba, new_dansa)


def normalise(values: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """Map min → 0 and max → 1000 linearly; all equal → 500 each."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if low == high:
        return dict.fromkeys(values, Fraction(500))
    return {p: 1000 * (v - low) / (high - low) for p, v in values.items()}


def combine(
    paluba_strengths: Mapping[str, int],
    dansa_ratings: Mapping[str, int],
    peklo_elos: Mapping[str, float],
) -> dict[str, CasRating]:
    """The ladder strength of every player: round((N_P + N_D + N_Pk) / 3), exactly."""
    players = set(paluba_strengths) | set(dansa_ratings) | set(peklo_elos)
    missing = players - (set(paluba_strengths) & set(dansa_ratings) & set(peklo_elos))
    if missing:
        raise ValueError(f"players missing a component: {sorted(missing)}")
    n_p = normalise({p: Fraction(v) for p, v in paluba_strengths.items()})
    n_d = normalise({p: Fraction(v) for p, v in dansa_ratings.items()})
    n_k = normalise({p: Fraction(v) for p, v in peklo_elos.items()})
    return {
        p: CasRating(
            strength=round_to_int((n_p[p] + n_d[p] + n_k[p]) / 3),
            paluba=paluba_strengths[p],
            dansa=dansa_ratings[p],
            peklo=peklo_elos[p],
        )
        for p in players
    }
