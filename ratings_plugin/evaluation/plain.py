"""``evaluate`` on plain log rows: the fast path for a ladder of single matches.

A system whose plain replay also offers predictions
(:class:`~server.api.systems.PlainPredictions`:
each row's probability that side A wins from the standings before it, the row then applied;
:class:`~server.api.NotPlain` for a row it does not take) is evaluated from the log's rows
with no book, no ``Game`` and no unit: the same predictions bit for bit, and the same report
as :func:`ratings_plugin.evaluation.evaluate`. Every row it takes is a rated, scored game.
Every row is a unit of one game, so the win rates learn after each row whatever the first
system (as the books' path has them learn after each game or after each unit, the same here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any

from ratings_plugin.evaluation.predictors import WinRate
from ratings_plugin.evaluation.report import Collected, Seasoning
from ratings_plugin.evaluation.scores import outcome
from server.api import LadderConfig, LogRow, NotPlain, systems

Entry = tuple[dict[str, Any], LadderConfig]
PART_ROWS = 20_000
"""Rows :func:`evaluate_plain` applies at a time."""


def _every(game: Any) -> bool:
    return True


class PlainRun:
    """Each entry's plain predictions over plain log rows fed a part at a time, and the two
    rows beside them; the report after any part is :func:`evaluate_plain`'s on the rows so
    far. Make one with :meth:`start`."""

    def __init__(self, entries: Sequence[Entry], predictors: Sequence[systems.PlainPredictions],
                 baselines: bool) -> None:
        self.predictors = predictors
        self.seasoning = Seasoning()
        self.collected = [Collected(self.seasoning)
                          for _ in range(len(entries) + 2 * baselines)]
        for c in self.collected[1:]:  # every row scores every row: one array of outcomes
            c.ys = self.collected[0].ys
        self.win_rate = WinRate(_every) if baselines else None
        self.names: list[tuple[str, dict[str, Any]]] = [
            (ladder.system.name, dict(variant)) for variant, ladder in entries]
        if baselines:
            self.names += [("baseline", {}), ("win_rate", {})]

    @classmethod
    def start(cls, entries: Sequence[Entry], ids: Mapping[str, int],
              baselines: bool = True) -> PlainRun | None:
        """A run over a log whose players ``ids`` names (the mapping may grow between parts),
        or ``None`` when there is no entry or a system has no plain predictions."""
        found = []
        for _, ladder in entries:
            plain = systems.plain_predictions(ladder, ids)
            if plain is None:
                return None
            found.append(plain)
        return cls(entries, found, baselines) if found else None

    def feed(self, rows: Sequence[LogRow]) -> None:
        """Apply the next ``rows`` of the log, in order. Raises :class:`~server.api.NotPlain`
        at a row a system does not take (the run is then spent: evaluate the units through
        books)."""
        collected = self.collected
        for predictor, c in zip(self.predictors, collected, strict=False):
            c.ps.extend(predictor.predictions(rows))
        ys = [outcome(r[6], r[7]) for r in rows]
        collected[0].ys.extend(ys)
        add = self.seasoning.add
        win = self.win_rate
        if win is None:
            for r in rows:
                add((r[3], r[4]))
            return
        collected[-2].ps.extend([0.5] * len(rows))
        rates = collected[-1].ps.append
        chance, result = win.chance, win.result
        for r, y in zip(rows, ys, strict=True):
            a, b = (r[3],), (r[4],)
            add((r[3], r[4]))
            rates(chance(a, b))
            result(a, b, y)

    def report(self) -> dict[str, Any]:
        return {"systems": [c.report(system, variant)
                            for c, (system, variant) in zip(self.collected, self.names,
                                                            strict=True)]}


def evaluate_plain(entries: Sequence[Entry], log: Iterable[LogRow], ids: Mapping[str, int],
                   baselines: bool = True) -> dict[str, Any] | None:
    """The report :func:`~ratings_plugin.evaluation.evaluate` gives on the same log, or
    ``None`` when a system has no plain predictions or refuses a row (:class:`NotPlain`):
    then evaluate the ladder's units through books. ``ids`` maps every player of the log to
    an id, as ``plain_replay`` needs."""
    run = PlainRun.start(entries, ids, baselines)
    if run is None:
        return None
    rows = iter(log)
    try:
        while part := list(islice(rows, PART_ROWS)):
            run.feed(part)
    except NotPlain:
        return None
    return run.report()
