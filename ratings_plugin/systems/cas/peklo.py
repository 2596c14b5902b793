"""Peklo (RATINGS.md §3.4): a whole-history Bradley–Terry-style fit, vectorised.

It is solved afresh from every ČAS game ever rated, on every event close, so
the pair table is aggregated sparsely (one entry per pair that met, grouped by
player with one integer sort) and each iteration is a handful of numpy passes
over those pairs (see docs/PERFORMANCE.md: about 0.2 s for 1,000,000 games).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

PAD_GAMES = 20
TOLERANCE = 1e-12
UNDAMPED_ITERATIONS = 100  # a connected history converges in a few dozen plain steps
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
    """Directed pair table: for each (src, dst) that met, points src scored and lost.

    ``aggregate`` returns the rows sorted by (src, dst), so every player's rows
    are one contiguous run; ``solve_table`` sums over those runs (a table built
    elsewhere is sorted first).
    """

    n: int
    src: IntArray
    dst: IntArray
    won: FloatArray
    lost: FloatArray
    games: IntArray


_PACKED_MAX_N = 1 << 30
"""Largest n for which key·4 + points code (key < n²) fits in an int64."""


def aggregate(first: IntArray, second: IntArray, points_first: FloatArray, n: int) -> PairTable:
    """Sum the games into b[i][j] for every pair that met (win 1, draw ½, loss 0).

    Each game becomes two directed rows (player → opponent and back), grouped
    by sorting.  For real results (whole and half points) the pair key and the
    points are packed into one integer, so a plain ``sort`` does the grouping,
    several times faster than ``np.unique(return_inverse=True)``; sums of
    halves are exact, so the table does not depend on the summation order.
    """
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    points_first = np.asarray(points_first, dtype=np.float64)
    if not first.shape == second.shape == points_first.shape:
        raise ValueError("first, second and points_first must have the same length")
    if np.any(first == second):
        raise ValueError("a player cannot play themselves")
    if first.size and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= n):
        raise ValueError("player index out of range")
    games = (np.bincount(first, minlength=n) + np.bincount(second, minlength=n)).astype(np.int64)
    halves = points_first * 2.0
    if n <= _PACKED_MAX_N and bool(np.all((halves == np.rint(halves)) & (halves >= 0.0) & (halves <= 2.0))):
        src, dst, won, lost = _aggregate_halves(first, second, halves.astype(np.int64), n)
    else:
        src, dst, won, lost = _aggregate_general(first, second, points_first, n)
    return PairTable(n=n, src=src, dst=dst, won=won, lost=lost, games=games)


def _aggregate_halves(
    first: IntArray, second: IntArray, halves: IntArray, n: int
) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
    """Fast path: sort (src·n + dst)·4 + half-points as plain integers.

    The keys are built in place in one buffer, of uint32 when 4·n² fits (half
    the bytes to write, sort and scan; fresh memory is costly to touch).
    """
    games = first.size
    key_type = np.uint32 if 4 * n * n <= 1 << 32 else np.int64
    packed: npt.NDArray[np.integer[Any]] = np.empty(2 * games, dtype=key_type)
    forward, backward = packed[:games], packed[games:]
    for key, src, dst, code in ((forward, first, second, halves), (backward, second, first, 2 - halves)):
        np.multiply(src, n, out=key, casting="unsafe")
        np.add(key, dst, out=key, casting="unsafe")
        key <<= 2
        np.add(key, code, out=key, casting="unsafe")
    packed.sort()
    keys = packed >> 2
    starts = _run_starts(keys)
    if starts.size == 0:
        none = np.zeros(0, dtype=np.int64)
        return none, none, np.zeros(0), np.zeros(0)
    pair_src, pair_dst = np.divmod(keys[starts].astype(np.int64), n)
    packed &= 3
    won = np.add.reduceat(packed, starts) * 0.5
    lost = np.diff(np.append(starts, keys.size)) - won
    return pair_src, pair_dst, won, lost


def _aggregate_general(
    first: IntArray, second: IntArray, points_first: FloatArray, n: int
) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
    """Any points (or a huge n): group the directed rows with a stable argsort."""
    keys = np.concatenate([first * n + second, second * n + first])
    points = np.concatenate([points_first, 1.0 - points_first])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    points = points[order]
    starts = _run_starts(keys)
    pair = keys[starts]
    if starts.size == 0:
        return pair, pair, np.zeros(0), np.zeros(0)
    won = np.add.reduceat(points, starts)
    lost = np.add.reduceat(1.0 - points, starts)
    return pair // n, pair % n, won, lost


def _run_starts(sorted_values: npt.NDArray[np.integer[Any]]) -> IntArray:
    """Index of the first element of every run of equal values in a sorted array."""
    if sorted_values.size == 0:
        return np.zeros(0, dtype=np.int64)
    flags = np.empty(sorted_values.size, dtype=bool)
    flags[0] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=flags[1:])
    return np.flatnonzero(flags)


_BLOCK_ROWS = 1 << 17
"""Rows per block of a step: a block's gathered x and products (1 MB each) stay in
cache instead of streaming full-length temporaries through memory (≈1.5× faster
per step on 2M rows than whole-array passes)."""


class _OpponentSums:
    """x ↦ (Σ_j won[i][j]·x_j, Σ_j lost[i][j]·x_j) for every player i, over a src-sorted table.

    Each player's rows are one contiguous run, so a sum is one ``np.add.reduceat``
    segment (several times faster than ``np.bincount(src, weights=...)``).  The
    rows are processed in blocks that end on a player boundary, so every
    segment is summed over the same values in the same order whatever the
    block size: blocking does not change a single bit.
    """

    def __init__(self, src: IntArray, dst: IntArray, won: FloatArray, lost: FloatArray, n: int) -> None:
        self.n = n
        self.dst = dst
        self.won = won
        self.lost = lost
        starts = _run_starts(src)
        self.players = src[starts]
        runs = starts.size
        first_runs = np.unique(np.searchsorted(starts, np.arange(0, src.size, _BLOCK_ROWS)))
        bounds = np.append(first_runs[first_runs < runs], runs).tolist()
        row_at = np.append(starts, src.size).tolist()
        self.blocks = [
            (row_at[k0], row_at[k1], k0, k1, starts[k0:k1] - row_at[k0])
            for k0, k1 in pairwise(bounds)
        ]
        size = max((end - begin for begin, end, *_ in self.blocks), default=0)
        self.gathered = np.empty(size)
        self.product = np.empty(size)
        self.won_sums = np.empty(runs)
        self.lost_sums = np.empty(runs)

    def __call__(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        for begin, end, k0, k1, local_starts in self.blocks:
            rows = end - begin
            gathered = self.gathered[:rows]
            product = self.product[:rows]
            # out= with the default mode="raise" makes numpy buffer a copy; the indices are valid anyway.
            np.take(x, self.dst[begin:end], out=gathered, mode="wrap")
            np.multiply(self.won[begin:end], gathered, out=product)
            np.add.reduceat(product, local_starts, out=self.won_sums[k0:k1])
            np.multiply(self.lost[begin:end], gathered, out=product)
            np.add.reduceat(product, local_starts, out=self.lost_sums[k0:k1])
        return self._by_player(self.won_sums), self._by_player(self.lost_sums)

    def _by_player(self, sums: FloatArray) -> FloatArray:
        """Per-run sums as a fresh length-n array; players without rows get 0."""
        out = np.zeros(self.n)
        out[self.players] = sums
        return out


def _sorted_by_src(table: PairTable) -> PairTable:
    """The table itself if its rows are grouped by src (as ``aggregate`` makes them), else a sorted copy."""
    src = np.asarray(table.src, dtype=np.int64)
    if src.size < 2 or bool(np.all(src[1:] >= src[:-1])):
        return table
    order = np.argsort(src, kind="stable")
    return PairTable(
        table.n, src[order], np.asarray(table.dst)[order], np.asarray(table.won)[order],
        np.asarray(table.lost)[order], table.games,
    )


def solve_table(table: PairTable) -> PekloSolution:
    """Iterate RATINGS.md's fixed point from x = ½ until max |Δx| < 1e-12.

    A step needs, per player, Σ b[i][j]·x_j and Σ b[j][i]·x_j over the
    opponents; ``_OpponentSums`` computes both in one blocked pass.
    """
    n = table.n
    if n == 0:
        empty = np.zeros(0)
        return PekloSolution(empty, empty, 0, True)
    table = _sorted_by_src(table)
    sums = _OpponentSums(
        np.asarray(table.src, dtype=np.int64), np.asarray(table.dst, dtype=np.int64),
        np.asarray(table.won, dtype=np.float64), np.asarray(table.lost, dtype=np.float64), n,
    )
    pad = np.maximum(0, PAD_GAMES - table.games) / 2.0
    half_pad = pad * 0.5
    lost_total = sums(np.ones(n))[1] + half_pad
    x = np.full(n, 0.5)
    target = n / 2.0
    converged = False
    iterations = 0
    for iterations in range(1, MAX_ITERATIONS + 1):
        won_x, lost_x = sums(x)
        num = won_x + half_pad
        y = num / (num + lost_total - lost_x)
        new = y * (target / y.sum())
        np.clip(new, CLAMP, 1.0 - CLAMP, out=new)
        delta = float(np.max(np.abs(new - x)))
        if iterations > UNDAMPED_ITERATIONS:
            # Same fixed point, reached by half steps: the plain step oscillates for
            # ever when no one is padded and the games split into two sides that
            # only meet each other (two clubs, or two players alone).
            new = 0.5 * (x + new)
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
    """Every rated ČAS game, kept as the aggregated pair table Peklo solves.

    A close only aggregates its own games and merges them into the table
    (one ``searchsorted`` and one ``np.insert`` per column) instead of
    re-aggregating the whole history. The merged table holds exactly what
    :func:`aggregate` makes of all the games (same rows, same order, same
    values: the points are whole and half numbers, so their sums are exact in
    any order), so :meth:`solve` is bit for bit :func:`solve_peklo` over the
    full game list. :meth:`extended` leaves the history unchanged.
    """

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self._count = 0
        self._keys: IntArray = np.zeros(0, dtype=np.int64)  # src << 32 | dst, sorted, unique
        self._won: FloatArray = np.zeros(0)
        self._lost: FloatArray = np.zeros(0)
        self._played: IntArray = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return self._count

    def extended(self, games: Iterable[tuple[str, str, int, int]]) -> PekloHistory:
        """A new history with ``games`` (player, opponent, score, opponent score) appended."""
        index = dict(self.index)
        names = list(self.names)
        first: list[int] = []
        second: list[int] = []
        points: list[float] = []
        for a, b, sa, sb in games:
            for p in (a, b):
                if p not in index:
                    index[p] = len(names)
                    names.append(p)
            first.append(index[a])
            second.append(index[b])
            points.append(points_of(sa, sb))
        out = PekloHistory()
        out.index, out.names, out._count = index, names, self._count + len(first)
        if len(names) >= 1 << 31:
            raise ValueError("too many players for the packed pair keys")
        batch = aggregate(np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64),
                          np.asarray(points, dtype=np.float64), len(names))
        out._played = batch.games
        out._played[: self._played.size] += self._played
        keys = (batch.src << 32) | batch.dst
        at = np.searchsorted(self._keys, keys)
        found = at < self._keys.size
        found[found] = self._keys[at[found]] == keys[found]
        fresh = ~found
        out._keys = np.insert(self._keys, at[fresh], keys[fresh])
        out._won = np.insert(self._won, at[fresh], batch.won[fresh])
        out._lost = np.insert(self._lost, at[fresh], batch.lost[fresh])
        # pairs that had met before: add to their rows, wherever the inserts moved them
        moved = at[found] + np.searchsorted(at[fresh], at[found], side="right")
        out._won[moved] += batch.won[found]
        out._lost[moved] += batch.lost[found]
        return out

    def add(self, games: Iterable[tuple[str, str, int, int]]) -> None:
        """Append games as (player, opponent, score, opponent score)."""
        self.__dict__.update(self.extended(games).__dict__)

    def table(self) -> PairTable:
        """The pair table of every game so far, as :func:`aggregate` makes it."""
        return PairTable(n=len(self.names), src=self._keys >> 32, dst=self._keys & 0xFFFFFFFF,
                         won=self._won, lost=self._lost, games=self._played)

    def solution(self) -> PekloSolution:
        """Peklo over the whole history; player i is ``names[i]``."""
        return solve_table(self.table())

    def solve(self) -> dict[str, float]:
        """Every player's Peklo Elo over the whole history."""
        return elo_by_name(self.names, self.solution())


def elo_by_name(names: Sequence[str], solution: PekloSolution) -> dict[str, float]:
    return dict(zip(names, solution.elo.tolist(), strict=True))
