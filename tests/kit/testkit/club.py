"""A results file of a club whose players have latent strengths: games drawn by FIBS's own win
model, so the truth is known. The chart in docs/evaluate-chart.png is drawn from one:

    PYTHONPATH=tests/kit .venv/bin/python -m testkit.club club.csv
    .venv/bin/matchlobby evaluate --file club.csv --system fibs --system fibs \\
        --option experience_includes_match=false --system glicko2 --chart docs/evaluate-chart.png
"""

from __future__ import annotations

import argparse
import math
import random
from datetime import date, timedelta
from pathlib import Path

from testkit.results import results_text

LENGTHS = (1, 3, 5, 7)
GAMES_A_NIGHT = 10


def win_chance(a: float, b: float, length: int) -> float:
    """FIBS's chance that a player rated ``a`` beats one rated ``b`` over ``length`` points."""
    return 1 / (1 + 10 ** ((b - a) * math.sqrt(length) / 2000))


def club(path: Path, seed: int = 7, players: int = 10, games: int = 240,
         spread: float = 350.0) -> Path:
    """``games`` matches among ``players`` whose ratings are drawn around 1500 (``spread`` the
    standard deviation), a club night of ten a day from 2026-01-01, written to ``path``."""
    rnd = random.Random(seed)
    strength = {f"p{i:02d}": rnd.gauss(1500, spread) for i in range(players)}
    names = sorted(strength)
    rows = []
    for n in range(games):
        a, b = rnd.sample(names, 2)
        length = rnd.choice(LENGTHS)
        won = rnd.random() < win_chance(strength[a], strength[b], length)
        day = date(2026, 1, 1) + timedelta(days=n // GAMES_A_NIGHT)
        rows.append(f"Night {1 + n // GAMES_A_NIGHT},{day.isoformat()},{a},{b},"
                    f"{length if won else 0},{0 if won else length},{length},")
    path.write_text(results_text(rows), encoding="utf-8")
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("out", type=Path)
    p.add_argument("--players", type=int, default=40)
    p.add_argument("--games", type=int, default=4000)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    club(args.out, args.seed, args.players, args.games)


if __name__ == "__main__":
    main()
