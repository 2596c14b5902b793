"""Benchmark: automatch's pairing pass over pools of growing size.

A server with seekers runs a pass about once a second (and after each seek): it reads the
pool, decides the pairs (``server.lobby.pairing.pair``) and, when there is one, starts the
matches. The decision compares every two seekers of one ladder and length, each comparison
asking the ladder's own expectation (FIBS's match-length win probability here, as the ratings
plugin's ``win_chance`` hook gives it). This bench times the decision alone, the part that
grows with the pool, for one ladder and one length (the worst case: everybody in one group).

Baseline, same process: the expectation evaluated once for every two seekers, read from the
same standings by name, and nothing else: the floor of any pairing that weighs every pair by
the ladder's expectation. The ratio says what the ranges, the sort and the greedy choice add.

Run from the repository root:  .venv/bin/python bench/seek_pool.py
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from ratings_plugin.systems.fibs.standing import FibsLadder, FibsStanding
from ratings_plugin.systems.fibs.system import Fibs
from server.lobby.pairing import Seeker, Widening, pair

LENGTH = 5
TICK = 1.0  # seconds between a server's passes while anyone seeks


def pool_of(size: int, rng: random.Random, now: float) -> tuple[list[Seeker],
                                                                 dict[str, FibsStanding]]:
    """``size`` seekers of one ladder and length: ratings around 1500, ranges of 50 to 200
    points, waiting up to a minute."""
    seekers, standings = [], {}
    for i in range(size):
        name = f"p{i}"
        rating = rng.gauss(1500.0, 150.0)
        standings[name] = FibsStanding(name, rating, games=rng.randint(0, 500))
        seekers.append(Seeker(i + 1, name, "backgammon", LENGTH, rating, 0.0,
                              rng.choice((50, 100, 200)), now - rng.uniform(0.0, 60.0)))
    return seekers, standings


def timed(run: Callable[[], object], repeats: int) -> float:
    """The median of ``repeats`` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(size: int, rng: random.Random, now: float, repeats: int) -> str:
    """One pool's line: its pairs, the pass and the floor (medians), their ratio."""
    system, options = Fibs(), FibsLadder()
    seekers, standings = pool_of(size, rng, now)
    widening = Widening()

    def chance(a: Seeker, b: Seeker) -> float:
        return system.expectation(options, standings[a.name], standings[b.name], a.length)

    def floor() -> None:
        for i, a in enumerate(seekers):
            for b in seekers[i + 1:]:
                chance(a, b)

    formed = pair(seekers, now, widening, chance)
    passed = timed(lambda: pair(seekers, now, widening, chance), repeats)
    base = timed(floor, repeats)
    return (f"{size:>6} {len(formed):>6} {passed * 1000:>9.2f} {base * 1000:>9.2f} "
            f"{passed / base:>6.2f} {passed / TICK:>15.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,100,300,1000",
                        help="pool sizes, comma-separated (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each (median)")
    args = parser.parse_args()
    rng = random.Random(30)
    now = time.time()
    print(f"{'pool':>6} {'pairs':>6} {'pass ms':>9} {'floor ms':>9} {'ratio':>6} "
          f"{'share of a tick':>16}")
    for size in (int(s) for s in args.sizes.split(",")):
        print(measure(size, rng, now, args.repeats))
    print("ratio: the pass over the floor (the expectation of every two seekers alone), "
          "same process")


if __name__ == "__main__":
    main()
