"""Glicko-2 as docs/RATINGS.md states it, written out independently of the server.

The tests check the server's Glicko-2 ladders against this: Glickman's steps
2–8 for one rating period, the idle step that grows RD with the time away, and
:class:`GlickoModel`, a ladder replayed from a list of periods (live matches
with the time they ended, events with their day), the way the lobby's log
holds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

SCALE = 173.7178
TAU = 0.5
PERIODS_PER_DAY = 0.21436
START = (1500.0, 350.0, 0.06)
REL = 1e-6
"""How close the server's values must come to this module's. The volatility's iteration stops
anywhere within ε = 0.000001 of ln σ′², and rounding noise can make two correct programs stop at
opposite ends of its last bracket: about one period in a million, σ′ then differs by up to 5e-7
(relative), the rating and RD by less; otherwise they agree to about 1e-11."""


def g(phi: float) -> float:
    return 1 / math.sqrt(1 + 3 * phi ** 2 / math.pi ** 2)


def win_probability(r_a: float, rd_a: float, r_b: float, rd_b: float) -> float:
    """§5's expectation: 1/(1 + exp(−g(√(φA² + φB²))·(μA − μB)))."""
    mu_a, mu_b = (r_a - 1500) / SCALE, (r_b - 1500) / SCALE
    phi = math.hypot(rd_a / SCALE, rd_b / SCALE)
    return 1 / (1 + math.exp(-g(phi) * (mu_a - mu_b)))


def new_volatility(phi: float, sigma: float, delta: float, v: float, tau: float) -> float:
    """Step 5 of Glickman's 2013 example (the Illinois iteration, ε = 0.000001)."""
    a = math.log(sigma ** 2)

    def f(x: float) -> float:
        return (math.exp(x) * (delta ** 2 - phi ** 2 - v - math.exp(x))
                / (2 * (phi ** 2 + v + math.exp(x)) ** 2) - (x - a) / tau ** 2)

    big_a = a
    if delta ** 2 > phi ** 2 + v:
        big_b = math.log(delta ** 2 - phi ** 2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > 0.000001:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2)


def period(r: float, rd: float, sigma: float, results: Sequence[tuple[float, float, float]],
           tau: float = TAU) -> tuple[float, float, float]:
    """Steps 2–8: (r′, RD′, σ′) after games against (r_j, RD_j, score) opponents."""
    mu, phi = (r - 1500) / SCALE, rd / SCALE
    # Summed in game order (not with sum(), which compensates from Python 3.12 on): the
    # volatility's iteration may return the other end of its last bracket, up to ε away, when
    # rounding noise flips the sign of f(C) near the root, so the sums must round alike.
    information = 0.0
    improvement = 0.0
    for r_j, rd_j, score in results:
        mu_j, phi_j = (r_j - 1500) / SCALE, rd_j / SCALE
        e = 1 / (1 + math.exp(-g(phi_j) * (mu - mu_j)))
        information += g(phi_j) ** 2 * e * (1 - e)
        improvement += g(phi_j) * (score - e)
    v = 1 / information
    sigma_new = new_volatility(phi, sigma, v * improvement, v, tau)
    phi_star = math.sqrt(phi ** 2 + sigma_new ** 2)
    phi_new = 1 / math.sqrt(1 / phi_star ** 2 + 1 / v)
    mu_new = mu + phi_new ** 2 * improvement
    return 1500 + SCALE * mu_new, SCALE * phi_new, sigma_new


def grown_rd(rd: float, sigma: float, periods: float, start_rd: float = START[1]) -> float:
    """The idle step: RD after ``periods`` rating periods away, never above the start RD."""
    if periods <= 0:
        return rd
    return SCALE * min(math.sqrt((rd / SCALE) ** 2 + periods * sigma ** 2), start_rd / SCALE)


@dataclass
class GlickoPlayer:
    rating: float = START[0]
    rd: float = START[1]
    volatility: float = START[2]
    games: int = 0
    last_day: date | None = None
    last_moment: datetime | None = None  # when the last period was a live match
    history: list[tuple[float, float]] = field(default_factory=list)


def moment(at: str) -> datetime:
    return datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ")


class GlickoModel:
    """A Glicko-2 ladder advanced period by period, as RATINGS.md §5 describes it."""

    def __init__(self, tau: float = TAU, periods_per_day: float = PERIODS_PER_DAY) -> None:
        self.tau = tau
        self.periods_per_day = periods_per_day
        self.players: dict[str, GlickoPlayer] = {}

    def get(self, name: str) -> GlickoPlayer:
        return self.players.setdefault(name, GlickoPlayer())

    def live(self, winner: str, loser: str, finished_at: str, day: date) -> None:
        """A live match: one period for its two players; time away in elapsed days."""
        self._period([(winner, loser, 1.0)], day, moment(finished_at))

    def event(self, day: date, games: Sequence[tuple[str, str, float]]) -> None:
        """An event of ``(a, b, a's score)`` games on ``day``: one period for everyone in it."""
        self._period(games, day, None)

    def _days(self, p: GlickoPlayer, day: date, at: datetime | None) -> float:
        if p.last_day is None:
            return 0.0
        if at is not None and p.last_moment is not None:
            return max(0.0, (at - p.last_moment).total_seconds() / 86400)
        return float(max(0, (day - p.last_day).days))

    def _period(self, games: Sequence[tuple[str, str, float]], day: date,
                at: datetime | None) -> None:
        names = list(dict.fromkeys(n for a, b, _ in games for n in (a, b)))
        start = {}
        for n in names:
            p = self.get(n)
            periods = self._days(p, day, at) * self.periods_per_day
            start[n] = (p.rating, grown_rd(p.rd, p.volatility, periods), p.volatility)
        results: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}
        for a, b, score in games:
            results[a].append((start[b][0], start[b][1], score))
            results[b].append((start[a][0], start[a][1], 1 - score))
        for n in names:
            p = self.get(n)
            r, rd, sigma = period(*start[n], results[n], self.tau)
            p.history.append((p.rating, r))
            p.rating, p.rd, p.volatility = r, rd, sigma
            p.games += len(results[n])
            p.last_day = day if p.last_day is None else max(p.last_day, day)
            p.last_moment = at

    def ranking(self) -> list[str]:
        return [n for n, _ in sorted(self.players.items(),
                                     key=lambda x: (-x[1].rating, x[0].casefold()))]
