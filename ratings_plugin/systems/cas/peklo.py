"""Peklo (RATINGS.md §3.4): a whole-history Bradley–Terry-style fit, vectorised.

It is solved afresh from every ČAS game ever rated, on every event close, so
the pair table is aggregated sparsely (one entry per pair that met) and each
iteration is a handful of numpy passes over those pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

PAD_GAMES = 20
TOLERANCE = 1e-12
MAX_ITERATIONS = 10_000
CLAMP = 1e-6

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PekloSolution:
    """``x[i]``: probability that player i beats a 1500 player; ``elo[i]`` its Elo form."""

    x: FloatArray
    elo: FloatArray
    iterations: int
    converged: bool


@dataclass(frozen=True)
class PairTable:
    """Directed pair table: for each (src, dst) that met, points src scored and lost."""

    n: int
    src: IntArray
    dst: IntArray
    won: FloatArray
    lost: FloatArray
    games: IntArray


def aggregate(first: IntArray, second: IntArray, points_first: FloatArray, n: int) -> PairTable:
    """Sum the games into b[i][j] for every pair that met (win 1, draw ½, loss 0)."""
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    points_first = np.asarray(points_first, dtype=np.float64)
    if np.any(first == second):
        raise ValueError("a player cannot play themselves")
    lo = np.minimum(first, second)
    hi = np.maximum(first, second)
    points_lo = np.where(first < second, points_first, 1.0 - points_first)
    keys, inverse = np.unique(lo * n + hi, return_inverse=True)
    b_lo = np.bincount(inverse, weights=points_lo, minlength=len(keys))
    b_hi = np.bincount(inverse, weights=1.0 - points_lo, minlength=len(keys))
    pair_lo = keys // n
    pair_hi = keys % n
    games = np.bincount(first, minlength=n) + np.bincount(second, minlength=n)
    return PairTable(
        n=n,
        src=np.concatenate([pair_lo, pair_hi]),
        dst=np.concatenate([pair_hi, pair_lo]),
        won=np.concatenate([b_lo, b_hi]),
        lost=np.concatenate([b_hi, b_lo]),
        games=games.astype(np.int64),
    )


def solve_table(table: PairTable) -> PekloSolution:
    """Iterate RATINGS.md's fixed point from x = ½ until max |Δx| < 1e-12."""
    n = table.n
    if n == 0:
        empty = np.zeros(0)
        return PekloSolution(empty, empty, 0, True)
    pad = np.maximum(0, PAD_GAMES - table.games) / 2.0
    half_pad = pad * 0.5
    lost_total = np.bincount(table.src, weights=table.lost, minlength=n) + half_pad
    x = np.full(n, 0.5)
    target = n / 2.0
    converged = False
    iterations = 0
    for iterations in range(1, MAX_ITERATIONS + 1):  # noqa: B007
        xd = x[table.dst]
        num = np.bincount(table.src, weights=table.won * xd, minlength=n) + half_pad
        lost_x = np.bincount(table.src, weights=table.lost * xd, minlength=n)
        y = num / (num + lost_total - lost_x)
        new = y * (target / y.sum())
        np.clip(new, CLAMP, 1.0 - CLAMP, out=new)
        delta = float(np.max(np.abs(new - x)))
        x = new
        if delta < TOLERANCE:
            converged = True
            break
    elo = 1500.0 + 200.0 * np.log2(x / (1.0 - x))
    return PekloSolution(x, elo, iterations, converged)


def solve_peklo(
    first: IntArray, second: IntArray, points_first: FloatArray, n: int
) -> PekloSolution:
    """Peklo over games given as index arrays (player, opponent, player's points)."""
    return solve_table(aggregate(first, second, points_first, n))


def points_of(score: int, opponent_score: int) -> float:
    return 1.0 if score > opponent_score else 0.0 if score < opponent_score else 0.5


class PekloHistory:
    """The growing list of every rated ČAS game, kept as arrays for fast re-solving."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self._first: list[int] = []
        self._second: list[int] = []
        self._points: list[float] = []

    def _id(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i

    def add(self, games: Iterable[tuple[str, str, int, int]]) -> None:
        """Append games as (player, opponent, score, opponent score)."""
        for a, b, sa, sb in games:
            self._first.append(self._id(a))
            self._second.append(self._id(b))
            self._points.append(points_of(sa, sb))

    def __len__(self) -> int:
        return len(self._first)

    def arrays(self) -> tuple[IntArray, IntArray, FloatArray]:
        return (
            np.asarray(self._first, dtype=np.int64),
            np.asarray(self._second, dtype=np.int64),
            np.asarray(self._points, dtype=np.float64),
        )

    def solve(self) -> dict[str, float]:
        """Every player's Peklo Elo over the whole history."""
        return elo_by_name(self.names, solve_peklo(*self.arrays(), len(self.names)))


def elo_by_name(names: Sequence[str], solution: PekloSolution) -> dict[str, float]:
    return dict(zip(names, solution.elo.tolist(), strict=True))
