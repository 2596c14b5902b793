"""Benchmark: Peklo (RATINGS.md §3.4) against choix's pairwise Bradley–Terry solvers.

Peklo is re-solved from the whole ČAS history on every event close, so it has
to stay fast on a big history (target: ≈1 s for 1,000,000 games among 20,000
players on a 2-core machine, and ≥100× faster per game than choix).

The history is synthetic and seeded: latent strengths s ~ N(0, 1) on the
natural-log Bradley–Terry scale, lognormal activity (some players have few
games and get Peklo's padding), opponents drawn by activity, a share of draws
and otherwise a win with probability 1 / (1 + e^(s_opponent − s_player)).

choix builds a dense n × n Markov chain and LU-factorises it on every
iteration, so it cannot run on 20,000 players (each n × n matrix is 3.2 GB).
It runs on smaller histories of the same shape instead: same generator and
seed, same number of games per player (``--choix-games``; the player count
is scaled with it).  Peklo is timed on those same histories too.

Run from the repository root:  .venv/bin/python bench/peklo.py
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ratings_plugin.systems.cas import peklo

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
T = TypeVar("T")


@dataclass(frozen=True)
class History:
    """A synthetic game list: ``first`` scored ``points`` against ``second``."""

    players: int
    strength: FloatArray
    first: IntArray
    second: IntArray
    points: FloatArray

    @property
    def games(self) -> int:
        return int(self.first.size)


def generate(
    games: int, players: int, seed: int, draws: float = 0.03, activity_sigma: float = 1.0
) -> History:
    """A seeded Bradley–Terry history (see the module docstring); same arguments → same games."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, players)
    activity = rng.lognormal(0.0, activity_sigma, players)
    p = activity / activity.sum()
    first = rng.choice(players, games, p=p)
    second = rng.choice(players, games, p=p)
    same = np.flatnonzero(first == second)
    while same.size:  # nobody plays themselves: redraw the opponent
        second[same] = rng.choice(players, same.size, p=p)
        same = same[first[same] == second[same]]
    p_win = 1.0 / (1.0 + np.exp(strength[second] - strength[first]))
    drawn = rng.random(games) < draws
    won = rng.random(games) < p_win
    points = np.where(drawn, 0.5, won.astype(np.float64))
    return History(players, strength, first.astype(np.int64), second.astype(np.int64), points)


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T, list[T]]:
    """Best wall time of ``repeat`` runs, the last result and every result (to check determinism)."""
    best = float("inf")
    results: list[T] = []
    for _ in range(repeat):
        start = time.perf_counter()
        results.append(fn())
        best = min(best, time.perf_counter() - start)
    return best, results[-1], results


@dataclass(frozen=True)
class PekloRun:
    first_call: float
    aggregate: float
    solve: float
    total: float
    solution: peklo.PekloSolution
    deterministic: bool


def load_module(path: str) -> ModuleType:
    """Import a peklo.py from a file (e.g. an older commit's, via git show) to time against."""
    spec = importlib.util.spec_from_file_location("peklo_baseline", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def time_peklo(h: History, repeat: int, impl: ModuleType = peklo) -> PekloRun:
    """Best of ``repeat`` for aggregate, solve and aggregate+solve (timed as one call).

    The very first call is timed on its own: fresh memory is slow to touch
    (notably in a VM), so a cold process pays extra once.
    """
    start = time.perf_counter()
    impl.solve_peklo(h.first, h.second, h.points, h.players)
    first_call = time.perf_counter() - start
    t_agg, table, _ = best_of(repeat, lambda: impl.aggregate(h.first, h.second, h.points, h.players))
    t_solve, _, _ = best_of(repeat, lambda: impl.solve_table(table))
    t_total, solution, all_runs = best_of(
        repeat, lambda: impl.solve_peklo(h.first, h.second, h.points, h.players)
    )
    same = all(np.array_equal(r.elo, solution.elo) for r in all_runs)
    return PekloRun(first_call, t_agg, t_solve, t_total, solution, same)


def choix_dense(h: History, alpha: float) -> FloatArray:
    """choix.ilsr_pairwise_dense on the n × n win matrix; a draw counts ½ a win each way (as in Peklo)."""
    import choix

    n = h.players
    wins = np.bincount(h.first * n + h.second, weights=h.points, minlength=n * n).astype(np.float64)
    wins += np.bincount(h.second * n + h.first, weights=1.0 - h.points, minlength=n * n)
    params: FloatArray = choix.ilsr_pairwise_dense(wins.reshape(n, n), alpha=alpha)
    return params


def choix_pairs(h: History, alpha: float) -> FloatArray:
    """choix.ilsr_pairwise on a list of (winner, loser); it has no draws, so they are dropped."""
    import choix

    decided = h.points != 0.5
    first, second, won = h.first[decided], h.second[decided], h.points[decided] == 1.0
    winner = np.where(won, first, second).tolist()
    loser = np.where(won, second, first).tolist()
    params: FloatArray = choix.ilsr_pairwise(h.players, list(zip(winner, loser, strict=True)), alpha=alpha)
    return params


def spearman(a: FloatArray, b: FloatArray) -> float:
    from scipy.stats import spearmanr  # choix depends on scipy; the bench may use it

    return float(spearmanr(a, b)[0])


def pearson(a: FloatArray, b: FloatArray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def log_strength(solution: peklo.PekloSolution) -> FloatArray:
    """Peklo on choix's scale: ln(x / (1 − x)), the natural-log strength against a 1500 player."""
    x = solution.x
    return np.log(x / (1.0 - x))


def machine() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (
        f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, numpy {np.__version__}"
    )


def load() -> str:
    """The 1-minute load average: choix's multi-threaded BLAS slows down a lot on a busy machine."""
    try:
        return os.getloadavg()[0].__format__(".2f")
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=1_000_000, help="games in the full history")
    parser.add_argument("--players", type=int, default=20_000, help="players in the full history")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--choix-games", type=int, nargs="*", default=[20_000, 100_000],
        help="sizes of the same-shape histories for choix (players scaled to keep games per player); "
        "none to skip choix",
    )
    parser.add_argument(
        "--choix-alpha", type=float, default=1e-3,
        help="choix's regularisation (its docs: start small, raise it if ILSR does not converge)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the best is reported")
    parser.add_argument(
        "--baseline", metavar="PEKLO_PY",
        help="another peklo.py (e.g. git show de10f64:ratings_plugin/systems/cas/peklo.py > old.py) "
        "to time on the full history and compare results with",
    )
    args = parser.parse_args(argv)

    print(f"machine: {machine()}; load average {load()}")
    full = generate(args.games, args.players, args.seed)
    print(
        f"history: {full.games:,} games, {full.players:,} players, seed {args.seed}, "
        f"{np.mean(full.points == 0.5):.1%} draws, "
        f"{np.mean(np.bincount(np.concatenate([full.first, full.second]), minlength=full.players) < 20):.1%}"
        " of players padded (< 20 games)"
    )
    run = time_peklo(full, args.repeat)
    peklo_us = run.total / full.games * 1e6
    rows: list[tuple[str, int, int, float, float, str, str, str]] = []
    rows.append(("Peklo aggregate", full.games, full.players, run.aggregate, 0.0, "", "", ""))
    rows.append(("Peklo solve_table", full.games, full.players, run.solve, 0.0, "", "", ""))
    rows.append((
        "Peklo solve_peklo (both)", full.games, full.players, run.total, peklo_us,
        str(run.solution.iterations), "", "1.0",
    ))
    notes = [
        f"Peklo's first call in this process (cold memory): {run.first_call:.3f} s",
        f"Peklo converged: {run.solution.converged}; bit-identical over {args.repeat} runs: "
        f"{run.deterministic}; Spearman with the latent strengths "
        f"{spearman(run.solution.elo, full.strength):.4f}"
    ]

    if args.baseline:
        old = time_peklo(full, args.repeat, load_module(args.baseline))
        name = os.path.basename(args.baseline)
        rows.append((f"baseline {name} aggregate", full.games, full.players, old.aggregate, 0.0, "", "", ""))
        rows.append((f"baseline {name} solve_table", full.games, full.players, old.solve, 0.0, "", "", ""))
        rows.append((
            f"baseline {name} solve_peklo", full.games, full.players, old.total, old.total / full.games * 1e6,
            str(old.solution.iterations), "", f"{old.total / run.total:.1f}",
        ))
        notes.append(
            f"baseline {name}: first call {old.first_call:.3f} s; max |ΔElo| against this Peklo "
            f"{float(np.max(np.abs(old.solution.elo - run.solution.elo))):.2e}"
        )

    for games in args.choix_games:
        players = max(2, round(full.players * games / full.games))
        sub = generate(games, players, args.seed)
        sub_run = time_peklo(sub, args.repeat)
        sub_us = sub_run.total / games * 1e6
        rows.append((
            "Peklo solve_peklo", games, players, sub_run.total, sub_us,
            str(sub_run.solution.iterations), "1.0", f"{sub_us / peklo_us:.1f}",
        ))
        for label, solver in (
            ("choix ilsr_pairwise_dense", choix_dense),
            ("choix ilsr_pairwise", choix_pairs),
        ):
            try:
                seconds, params, _ = best_of(args.repeat, partial(solver, sub, args.choix_alpha))
            except RuntimeError as error:  # ILSR gives up after max_iter without converging
                notes.append(f"{label} on {games:,} games: {error}")
                continue
            us = seconds / games * 1e6
            rows.append(
                (label, games, players, seconds, us, "", f"{us / sub_us:.0f}", f"{us / peklo_us:.0f}")
            )
            notes.append(
                f"{label} on {games:,} games agrees with Peklo: "
                f"Spearman {spearman(params, sub_run.solution.elo):.4f}, "
                f"Pearson of log-strengths {pearson(params, log_strength(sub_run.solution)):.4f} "
                f"(latent strengths: choix {spearman(params, sub.strength):.4f}, "
                f"Peklo {spearman(sub_run.solution.elo, sub.strength):.4f})"
            )

    header = ("system", "games", "players", "seconds", "µs/game", "iter", "÷ Peklo same", "÷ Peklo full")
    print()
    print(f"| {' | '.join(header)} |")
    print(f"|{'|'.join(['---'] + ['---:'] * (len(header) - 1))}|")
    for label, games, players, seconds, us, iters, same_ratio, full_ratio in rows:
        per_game = f"{us:.3f}" if us else ""
        cells = (label, f"{games:,}", f"{players:,}", f"{seconds:.3f}", per_game, iters)
        print(f"| {' | '.join((*cells, same_ratio, full_ratio))} |")
    print()
    print("µs/game: seconds / games.  ÷ Peklo same: per-game time over Peklo's on the same history;")
    print("÷ Peklo full: over Peklo's on the full history.  choix times include building its input.")
    print(f"Seconds: best of {args.repeat}.  Load average at the end: {load()}.")
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
