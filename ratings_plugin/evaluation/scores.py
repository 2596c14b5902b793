"""Scoring probabilities against what happened: log-loss, Brier, accuracy and calibration.

A prediction is ``p``, the probability that side A wins; the outcome ``y`` is 1 when A won,
0 when B won and 0.5 for a draw (half a win each). Pure arithmetic, no I/O.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Any

CLAMP = 1e-15
"""Log-loss takes ``p`` clamped to [1e-15, 1 − 1e-15]: only so that a certain prediction that
was wrong costs a large finite amount instead of ``log(0)``; no other smoothing is done."""

BINS = 10
EDGES = tuple(i / BINS for i in range(1, BINS))
"""The calibration bins' inner edges: [0, 0.1), [0.1, 0.2), …, [0.9, 1.0]."""


def outcome(score_a: int, score_b: int) -> float:
    """1 when side A won, 0 when side B won, 0.5 for a draw."""
    return 1.0 if score_a > score_b else 0.0 if score_a < score_b else 0.5


def log_loss(p: float, y: float) -> float:
    """−(y·ln p + (1 − y)·ln(1 − p)), ``p`` clamped (see :data:`CLAMP`)."""
    q = min(max(p, CLAMP), 1.0 - CLAMP)
    loss = 0.0
    if y > 0.0:
        loss -= y * math.log(q)
    if y < 1.0:
        loss -= (1.0 - y) * math.log(1.0 - q)
    return loss


def brier(p: float, y: float) -> float:
    return (p - y) ** 2


def accuracy(p: float, y: float) -> float:
    """1 for the right side called, 0 for the wrong one; half for a call of exactly 0.5 or a
    draw (neither side was right)."""
    if p == 0.5 or y == 0.5:
        return 0.5
    return 1.0 if (p > 0.5) == (y == 1.0) else 0.0


def bin_of(p: float) -> int:
    return bisect_right(EDGES, p)


class Tally:
    """Running sums of the scores of one row's predictions (a million games take no list)."""

    __slots__ = ("bin_games", "bin_p", "bin_y", "brier", "games", "log_loss", "right")

    def __init__(self) -> None:
        self.games = 0
        self.log_loss = 0.0
        self.brier = 0.0
        self.right = 0.0
        self.bin_games = [0] * BINS
        self.bin_p = [0.0] * BINS
        self.bin_y = [0.0] * BINS

    def add(self, p: float, y: float) -> None:
        self.games += 1
        self.log_loss += log_loss(p, y)
        self.brier += (p - y) * (p - y)
        self.right += accuracy(p, y)
        i = bisect_right(EDGES, p)
        self.bin_games[i] += 1
        self.bin_p[i] += p
        self.bin_y[i] += y

    def report(self) -> dict[str, Any]:
        """The scores as the report shows them: means (``None`` with no games) and the ten
        calibration bins, empty ones kept with ``games`` 0."""
        n = self.games
        bins = []
        for i in range(BINS):
            k = self.bin_games[i]
            bins.append({"bin": [i / BINS, (i + 1) / BINS], "games": k,
                         "predicted": self.bin_p[i] / k if k else None,
                         "observed": self.bin_y[i] / k if k else None})
        return {"games": n,
                "log_loss": self.log_loss / n if n else None,
                "brier": self.brier / n if n else None,
                "accuracy": self.right / n if n else None,
                "calibration": bins}
