"""Who predicts: a ladder's system through its own book, and the two rows beside the systems.

Each predictor is fed the units in order and hands back, for every game it scores, the
probability that side A wins as it stood just before that game.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ratings_plugin.evaluation.scores import outcome
from server.api import Game, LadderConfig, RatedUnit

Predictions = list[tuple[Game, float]]
"""A unit's scored games with their predictions (a list: the book has moved on when it is
handed back)."""


class SystemPredictor:
    """A ladder's system predicting with its own book (``Book.predict``).

    A system rated after each result (``rates_each_result``) predicts each game from the book
    after the game before it: the unit is applied one game at a time (its ``compute`` applies
    games one after another, so the ratings are the same). Any other system predicts every
    game of a unit from the book before the unit (an event rated when it closes; a live match
    is a unit of one game anyway). A game is scored when :attr:`scored` says so: when the
    system ``counts`` it, unless the report sets a rule for every row.
    """

    def __init__(self, ladder: LadderConfig) -> None:
        self.system = ladder.system
        self.options = ladder.options
        self.book = ladder.system.new_book(ladder.options)
        self.each = ladder.system.rates_each_result
        self.scored: Callable[[Game], bool] = self.counts

    def counts(self, game: Game) -> bool:
        return self.system.counts(self.options, game)

    def feed(self, unit: RatedUnit) -> Predictions:
        book, counts = self.book, self.scored
        if self.each and len(unit.games) > 1:
            said = []
            for g in unit.games:
                one = replace(unit, games=(g,))
                if counts(g):
                    said.append((g, book.predict(g)))
                book.accept(book.compute(one), one)
            return said
        said = [(g, book.predict(g)) for g in unit.games if counts(g)]
        book.accept(book.compute(unit), unit)
        return said


class Baseline:
    """Always 0.5: what knowing nothing scores (its log-loss is ln 2)."""

    def __init__(self, counts: Callable[[Game], bool]) -> None:
        self.counts = counts

    def feed(self, unit: RatedUnit) -> Predictions:
        return [(g, 0.5) for g in unit.games if self.counts(g)]


class WinRate:
    """Only the players' results so far: each player's Laplace-smoothed win rate
    (wins + 1) / (games + 2), a side of two by their mean, and A's chance rA / (rA + rB).
    A draw is half a win.

    The rates learn from results when the first system row does, so the row stands on the
    same footing: after each game (``each``: that system ``rates_each_result``, or there is
    no system) or else after each unit, every game of an event predicted from the rates
    before it."""

    def __init__(self, counts: Callable[[Game], bool], each: bool = True) -> None:
        self.counts = counts
        self.each = each
        self.wins: dict[str, float] = {}
        self.games: dict[str, int] = {}

    def rate(self, side: tuple[str, ...]) -> float:
        wins, games = self.wins, self.games
        total = 0.0  # a loop, not sum() over a generator: called once a side of every game
        for p in side:
            total += (wins.get(p, 0.0) + 1.0) / (games.get(p, 0) + 2.0)
        return total / len(side)

    def chance(self, side_a: tuple[str, ...], side_b: tuple[str, ...]) -> float:
        """A's chance from the rates so far."""
        ra, rb = self.rate(side_a), self.rate(side_b)
        return ra / (ra + rb)

    def learn(self, g: Game) -> None:
        self.result(g.side_a, g.side_b, outcome(g.score_a, g.score_b))

    def result(self, side_a: tuple[str, ...], side_b: tuple[str, ...], y: float) -> None:
        """A result with outcome ``y`` for A (a draw: half a win each) moves the rates."""
        wins, games = self.wins, self.games
        for p in side_a:
            wins[p] = wins.get(p, 0.0) + y
            games[p] = games.get(p, 0) + 1
        lost = 1.0 - y
        for p in side_b:
            wins[p] = wins.get(p, 0.0) + lost
            games[p] = games.get(p, 0) + 1

    def feed(self, unit: RatedUnit) -> Predictions:
        said = []
        scored = [g for g in unit.games if self.counts(g)]
        for g in scored:
            said.append((g, self.chance(g.side_a, g.side_b)))
            if self.each:
                self.learn(g)
        if not self.each:
            for g in scored:
                self.learn(g)
        return said
