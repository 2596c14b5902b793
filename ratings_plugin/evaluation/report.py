"""``evaluate``: every row's predictions over the same units, scored (the report's shape)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ratings_plugin.evaluation.predictors import Baseline, Predictions, SystemPredictor, WinRate
from ratings_plugin.evaluation.scores import Tally
from server.api import Game, LadderConfig, RatedUnit

SEASONED = 20
"""``after_20`` scores only games where every player already has this many scored games."""


class Predictor(Protocol):
    def feed(self, unit: RatedUnit) -> Predictions: ...


class Row:
    """One row of the report: a predictor, its two tallies and its players' scored games."""

    def __init__(self, system: str, variant: dict[str, Any], predictor: Predictor) -> None:
        self.system = system
        self.variant = variant
        self.predictor = predictor
        self.all = Tally()
        self.seasoned = Tally()
        self.played: dict[str, int] = {}

    def feed(self, unit: RatedUnit) -> None:
        played = self.played
        for g, p in self.predictor.feed(unit):
            y = 1.0 if g.score_a > g.score_b else 0.0 if g.score_a < g.score_b else 0.5
            self.all.add(p, y)
            if all(played.get(x, 0) >= SEASONED for x in g.players):
                self.seasoned.add(p, y)
            for x in g.players:
                played[x] = played.get(x, 0) + 1

    def report(self) -> dict[str, Any]:
        return {"system": self.system, "variant": self.variant, **self.all.report(),
                "after_20": self.seasoned.report()}


def _rated(game: Game) -> bool:
    return game.unrated_reason is None and game.length is not None


def evaluate(entries: Sequence[tuple[dict[str, Any], LadderConfig]], units: Iterable[RatedUnit],
             baselines: bool = True) -> dict[str, Any]:
    """Replay ``units`` (in order) through each entry's system and score its predictions.

    Each entry is the options given for a variant (``{}`` for the plain system) and the ladder
    configuration built with them. The report has one row per entry, in order, then (with
    ``baselines``) ``"baseline"`` and ``"win_rate"``, scored on the games the first entry's
    system counts (with no entry: every rated game with a length). A book refusing a game
    raises its ``ValueError``.
    """
    systems = [SystemPredictor(ladder) for _, ladder in entries]
    rows = [Row(ladder.system.name, dict(variant), predictor)
            for (variant, ladder), predictor in zip(entries, systems, strict=True)]
    if baselines:
        counts = systems[0].counts if systems else _rated
        rows += [Row("baseline", {}, Baseline(counts)), Row("win_rate", {}, WinRate(counts))]
    for unit in units:
        for row in rows:
            row.feed(unit)
    return {"systems": [row.report() for row in rows]}
