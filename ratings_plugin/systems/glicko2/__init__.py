"""Glicko-2 (Glickman, "Example of the Glicko-2 system", 2013): one rating period at a time.

A period is one live match for its two players, or one event for everyone in
it; all of its games are rated together from the values before it. Players
who are not in a period are not touched: the time they spent away is added to
their RD when they next play (:func:`idle`). Pure functions over plain
numbers, computed without rounding, so the paper's example comes out as
1464.0507 (the paper prints 1464.06 because it rounds μ′ first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SCALE = 173.7178
CENTRE = 1500.0
EPSILON = 0.000001
MAX_ITERATIONS = 10_000


@dataclass(frozen=True, slots=True)
class Glicko:
    """A player's values on the displayed scale: rating r, deviation RD, volatility σ."""

    rating: float = 1500.0
    rd: float = 350.0
    volatility: float = 0.06


SMALLEST = 1e-6
"""The least ``tau``, ``start_rd`` and ``start_volatility``: a smaller one underflows when squared."""


@dataclass(frozen=True, slots=True)
class GlickoOptions:
    """Per-ladder options (RATINGS.md §5)."""

    tau: float = 0.5
    start_rating: float = 1500.0
    start_rd: float = 350.0
    start_volatility: float = 0.06
    periods_per_day: float = 0.21436
    provisional_rd: float = 110.0

    def __post_init__(self) -> None:
        for key in ("tau", "start_rating", "start_rd", "start_volatility", "periods_per_day",
                    "provisional_rd"):
            if not math.isfinite(getattr(self, key)):
                raise ValueError(f"{key} must be a finite number")
        for key in ("tau", "start_rd", "start_volatility"):  # squared, divided by, logged
            if not getattr(self, key) >= SMALLEST:
                raise ValueError(f"{key} must be at least {SMALLEST:g}")
        if self.periods_per_day < 0:
            raise ValueError("periods_per_day cannot be negative")
        if self.provisional_rd < 0:
            raise ValueError("provisional_rd cannot be negative")

    @property
    def start(self) -> Glicko:
        return Glicko(self.start_rating, self.start_rd, self.start_volatility)


def g(phi: float) -> float:
    """Glickman's g(φ): how much an opponent's uncertainty damps what a game against them says."""
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def win_probability(a: Glicko, b: Glicko) -> float:
    """The probability that A beats B: 1/(1 + exp(−g(√(φA² + φB²))·(μA − μB)))."""
    phi = math.sqrt((a.rd / SCALE) ** 2 + (b.rd / SCALE) ** 2)
    return 1.0 / (1.0 + math.exp(-g(phi) * (a.rating - b.rating) / SCALE))


def idle(player: Glicko, days: float, options: GlickoOptions) -> Glicko:
    """``player`` after ``days`` without a game: φ ← min(√(φ² + t·σ²), φ_start), t = days ×
    periods per day. No time away (``t`` = 0, ``periods_per_day = 0`` included) leaves the values
    as they are."""
    t = days * options.periods_per_day
    if t <= 0:
        return player
    phi = player.rd / SCALE
    grown = math.sqrt(phi * phi + t * player.volatility * player.volatility)
    return Glicko(player.rating, SCALE * min(grown, options.start_rd / SCALE), player.volatility)


def _volatility(phi: float, sigma: float, delta: float, v: float, tau: float) -> float:
    """Step 5: σ′ by the Illinois iteration, the bracketing and halving exactly as the paper's."""
    a = math.log(sigma * sigma)
    phi2, delta2, tau2 = phi * phi, delta * delta, tau * tau

    def f(x: float) -> float:
        ex = math.exp(x)
        return (ex * (delta2 - phi2 - v - ex) / (2.0 * (phi2 + v + ex) ** 2)) - (x - a) / tau2

    big_a = a
    if delta2 > phi2 + v:
        big_b = math.log(delta2 - phi2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    for _ in range(MAX_ITERATIONS):
        if abs(big_b - big_a) <= EPSILON:
            break
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


def rate(player: Glicko, games: Sequence[tuple[Glicko, float]], tau: float) -> Glicko:
    """Steps 2-8 for one player over one period: ``games`` are (opponent, score) pairs, the
    score 1 for a win, ½ for a draw, 0 for a loss; every value is taken as it was before the
    period (after :func:`idle`). A player without games keeps their values."""
    if not games:
        return player
    mu = (player.rating - CENTRE) / SCALE
    phi = player.rd / SCALE
    inverse_v = 0.0
    improvement = 0.0
    for opponent, score in games:
        mu_j = (opponent.rating - CENTRE) / SCALE
        g_j = g(opponent.rd / SCALE)
        e_j = 1.0 / (1.0 + math.exp(-g_j * (mu - mu_j)))
        inverse_v += g_j * g_j * e_j * (1.0 - e_j)
        improvement += g_j * (score - e_j)
    v = 1.0 / inverse_v
    delta = v * improvement
    sigma = _volatility(phi, player.volatility, delta, v, tau)
    phi_star = math.sqrt(phi * phi + sigma * sigma)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * improvement
    return Glicko(SCALE * mu_new + CENTRE, SCALE * phi_new, sigma)
