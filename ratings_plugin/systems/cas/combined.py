"""The ČAS ladder strength (RATINGS.md §3.5): the three methods normalised and averaged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

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
    """The ladder strength of every player: (N_P + N_D + N_Pk) / 3 rounded half away from zero, exactly.

    See :func:`strengths` for how it is computed.
    """
    players = sorted(set(paluba_strengths) | set(dansa_ratings) | set(peklo_elos))
    missing = [p for p in players
               if p not in paluba_strengths or p not in dansa_ratings or p not in peklo_elos]
    if missing:
        raise ValueError(f"players missing a component: {missing}")
    if not players:
        return {}
    result = strengths(
        np.array([paluba_strengths[p] for p in players], dtype=np.float64),
        np.array([dansa_ratings[p] for p in players], dtype=np.float64),
        np.array([peklo_elos[p] for p in players], dtype=np.float64),
    ).tolist()
    return {
        p: CasRating(strength=result[i], paluba=paluba_strengths[p],
                     dansa=dansa_ratings[p], peklo=peklo_elos[p])
        for i, p in enumerate(players)
    }


def strengths(
    paluba_strengths: npt.NDArray[np.float64],
    dansa_ratings: npt.NDArray[np.float64],
    peklo_elos: npt.NDArray[np.float64],
) -> npt.NDArray[np.int64]:
    """:func:`combine` on aligned arrays (player i at index i of each): the strengths.

    It runs on every event close over the whole ladder, so the mean is taken
    in float64 for everyone and redone exactly (with fractions) only where it
    lies within 1e-9 of a half, the one place a float could round the other
    way: its error is below 1e-12 on this 0–1000 scale. (Paluba and Dansa
    values are integers, exact in float64; Peklo values are floats anyway.)
    """
    columns = (paluba_strengths, dansa_ratings, peklo_elos)
    mean = (_normalised(columns[0]) + _normalised(columns[1]) + _normalised(columns[2])) / 3.0
    out = np.floor(mean + 0.5).astype(np.int64)
    near_half = np.nonzero(np.abs(mean - np.floor(mean) - 0.5) < 1e-9)[0]
    if near_half.size:
        bounds = [(Fraction(float(c.min())), Fraction(float(c.max()))) for c in columns]
        for i in near_half.tolist():
            total = Fraction(0)
            for c, (low, high) in zip(columns, bounds, strict=True):
                total += Fraction(500) if low == high else (
                    1000 * (Fraction(float(c[i])) - low) / (high - low))
            out[i] = round_to_int(total / 3)
    return out


def _normalised(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The float form of :func:`normalise` (min → 0, max → 1000, all equal → 500)."""
    low, high = float(values.min()), float(values.max())
    if low == high:
        return np.full(values.shape, 500.0)
    return 1000.0 * (values - low) / (high - low)


def combine_exact(
    paluba_strengths: Mapping[str, int],
    dansa_ratings: Mapping[str, int],
    peklo_elos: Mapping[str, float],
) -> dict[str, CasRating]:
    """The definition in exact arithmetic for every player; :func:`combine` must agree."""
    n_p = normalise({p: Fraction(v) for p, v in paluba_strengths.items()})
    n_d = normalise({p: Fraction(v) for p, v in dansa_ratings.items()})
    n_k = normalise({p: Fraction(v) for p, v in peklo_elos.items()})
    return {
        p: CasRating(round_to_int((n_p[p] + n_d[p] + n_k[p]) / 3), paluba_strengths[p],
                     dansa_ratings[p], peklo_elos[p])
        for p in n_p
    }
