"""Automatch's decision, pure: which seekers of the pool play each other (pool in, pairs out).

Two seekers pair when they seek the same ladder and length and each one's rating is within
the other's reach. A reach is the range the seeker asked for, widened the longer they wait
(``Widening``) and by twice their rating's deviation (Glicko-2's RD; 0 where the system keeps
none). Among the pairs that fit, the one whose win chance (the ladder's own expectation) is
closest to 50 % is formed first, then the closest among those left, and so on; a tie goes to
the pair that has waited longest. The I/O around it (the pool's rows, the locks, starting the
matches) is :mod:`server.lobby.seeking`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Seeker:
    id: int
    name: str
    ladder: str
    length: int | None
    rating: float
    spread: float  # the rating's deviation where the system keeps one (Glicko-2's RD)
    points: int  # the range asked for
    since: float  # when the seek was made, in seconds (the clock ``now`` is read on)


@dataclass(frozen=True, slots=True)
class Widening:
    """A seeker's reach grows by ``points`` every ``every`` seconds in the pool (0: never)."""

    points: float = 50.0
    every: float = 10.0


Chance = Callable[[Seeker, Seeker], float]
"""The probability that the first beats the second, by the ladder's own expectation."""


def reach(s: Seeker, now: float, widening: Widening) -> float:
    """How far from their own rating ``s`` accepts an opponent at ``now``."""
    steps = 0 if widening.every <= 0 else max(0, math.floor((now - s.since) / widening.every))
    return s.points + 2.0 * s.spread + steps * widening.points


def fits(a: Seeker, b: Seeker, now: float, widening: Widening) -> bool:
    """Whether ``a`` and ``b`` may play: the same ladder and length, each within the other's
    reach."""
    if a.id == b.id or (a.ladder, a.length) != (b.ladder, b.length):
        return False
    gap = abs(a.rating - b.rating)
    return gap <= reach(a, now, widening) and gap <= reach(b, now, widening)


def pair(pool: Iterable[Seeker], now: float, widening: Widening, chance: Chance,
         apart: Collection[frozenset[int]] = ()) -> list[tuple[Seeker, Seeker]]:
    """The pairs to start now; nobody is in two. ``apart``: pairs of player ids that must not
    meet (one blocks the other). The first of each pair is the one who waited longer."""
    groups: dict[tuple[str, int | None], list[Seeker]] = {}
    seen: set[int] = set()
    for s in sorted(pool, key=lambda s: (s.since, s.id)):
        if s.id not in seen:  # one seek a player
            seen.add(s.id)
            groups.setdefault((s.ladder, s.length), []).append(s)
    ranked: list[tuple[float, float, float, int, int, Seeker, Seeker]] = []
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if frozenset((a.id, b.id)) in apart or not fits(a, b, now, widening):
                    continue
                ranked.append((abs(chance(a, b) - 0.5), a.since, b.since, a.id, b.id, a, b))
    ranked.sort(key=lambda r: r[:5])
    taken: set[int] = set()
    pairs: list[tuple[Seeker, Seeker]] = []
    for *_, a, b in ranked:
        if a.id not in taken and b.id not in taken:
            taken.update((a.id, b.id))
            pairs.append((a, b))
    return pairs
