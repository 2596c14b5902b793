"""``evaluate``: every row's predictions over the same units, scored (the report's shape)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ratings_plugin.evaluation.predictors import Baseline, Predictions, SystemPredictor, WinRate
from ratings_plugin.evaluation.scores import outcome
from ratings_plugin.evaluation.scores import report as scored
from server.api import Game, LadderConfig, RatedUnit

SEASONED = 20
"""``after_20`` scores only games where every player already has this many scored games."""


class Predictor(Protocol):
    def feed(self, unit: RatedUnit) -> Predictions: ...


class Seasoning:
    """Which scored games had only players with :data:`SEASONED` scored games before them.

    Rows that score the same games (a system's and the two beside it, which use its
    ``counts``) share one, so each game is looked at once."""

    def __init__(self) -> None:
        self.played: dict[str, int] = {}
        self.flags = bytearray()

    def add(self, players: tuple[str, ...]) -> None:
        played = self.played
        seasoned = True
        for x in players:
            if played.get(x, 0) < SEASONED:
                seasoned = False
        self.flags.append(seasoned)
        for x in players:
            played[x] = played.get(x, 0) + 1


class Collected:
    """One row's predictions and the outcomes, in game order, and which games were seasoned."""

    def __init__(self, seasoning: Seasoning) -> None:
        self.ps = array("d")
        self.ys = array("d")
        self.seasoning = seasoning

    def report(self, system: str, variant: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        flags = np.frombuffer(bytes(self.seasoning.flags[:len(self.ps)]), dtype=np.uint8) != 0
        ps, ys = np.frombuffer(self.ps), np.frombuffer(self.ys)
        return {"system": system, "variant": variant, **scored(ps, ys),
                "after_20": scored(ps[flags], ys[flags])}


class Row:
    """One row of the report: a predictor and what it said."""

    def __init__(self, system: str, variant: dict[str, Any], predictor: Predictor,
                 seasoning: Seasoning, leads: bool) -> None:
        self.system = system
        self.variant = variant
        self.predictor = predictor
        self.collected = Collected(seasoning)
        self.leads = leads  # it moves the shared seasoning on

    def feed(self, unit: RatedUnit) -> None:
        c = self.collected
        ps, ys = c.ps, c.ys
        seasoning = c.seasoning
        for g, p in self.predictor.feed(unit):
            ps.append(p)
            ys.append(outcome(g.score_a, g.score_b))
            if self.leads:
                seasoning.add(g.players)

    def report(self) -> dict[str, Any]:
        return self.collected.report(self.system, self.variant)


def _rated(game: Game) -> bool:
    return game.unrated_reason is None and game.length is not None


def evaluate(entries: Sequence[tuple[dict[str, Any], LadderConfig]], units: Iterable[RatedUnit],
             baselines: bool = True) -> dict[str, Any]:
    """Replay ``units`` (in order) through each entry's system and score its predictions.

    Each entry is the options given for a variant (``{}`` for the plain system) and the ladder
    configuration built with them. The report has one row per entry, in order, then (with
    ``baselines``) ``"baseline"`` and ``"win_rate"``. Every row is scored on the same games:
    those every entry's system counts (with no entry: every rated game with a length), so
    that rows are comparable where systems differ (an unlimited game counts for ČAS, not for
    FIBS); the win rates learn when the first system does (after each game or after each
    unit). A book refusing a game raises its ``ValueError``.
    """
    run = BooksRun(entries, baselines)
    run.feed(units)
    return run.report()


class BooksRun:
    """:func:`evaluate` fed the units a part at a time (the lobby carries a ladder's on from
    one ask to the next): every row keeps its state (its book, the win rates) between parts,
    so the parts give the report the whole log gives, and :meth:`report` may be asked after
    any of them."""

    def __init__(self, entries: Sequence[tuple[dict[str, Any], LadderConfig]],
                 baselines: bool = True) -> None:
        systems = [SystemPredictor(ladder) for _, ladder in entries]
        if len(systems) > 1:
            each_counts = [s.counts for s in systems]

            def every(game: Game) -> bool:
                return all(counts(game) for counts in each_counts)

            for s in systems:
                s.scored = every
        rows = [Row(ladder.system.name, dict(variant), predictor, Seasoning(), True)
                for (variant, ladder), predictor in zip(entries, systems, strict=True)]
        if baselines:
            counts = systems[0].scored if systems else _rated
            each = systems[0].each if systems else True
            shared, leads = (rows[0].collected.seasoning, False) if rows else (Seasoning(), True)
            rows += [Row("baseline", {}, Baseline(counts), shared, leads),
                     Row("win_rate", {}, WinRate(counts, each), shared, False)]
        self.rows = rows

    def feed(self, units: Iterable[RatedUnit]) -> None:
        """Apply the next ``units`` of the log, in order; a book refusing a game raises its
        ``ValueError`` (the run is then spent)."""
        rows = self.rows
        for unit in units:
            for row in rows:
                row.feed(unit)

    def report(self) -> dict[str, Any]:
        return {"systems": [row.report() for row in self.rows]}
