"""An evaluation fed the log a part at a time, its report available after any part.

:func:`~ratings_plugin.evaluation.evaluate` and
:func:`~ratings_plugin.evaluation.evaluate_plain` take a whole log at once; the commands read a
big ladder's log in pages (never all of it in memory), and the lobby keeps a ladder's
evaluation between asks and feeds it only the units rated since. Feeding the parts one after
another gives exactly the report the whole log gives: every predictor carries its state (its
book, the plain replay's standings, the win rates) from one part to the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ratings_plugin.evaluation.predictors import Baseline, SystemPredictor, WinRate
from ratings_plugin.evaluation.report import SEASONED, Collected, Row, Seasoning, _rated
from server.api import LadderConfig, LogRow, RatedUnit, systems

Entry = tuple[dict[str, Any], LadderConfig]


class BooksRun:
    """Each entry's system through its own book, and the two rows beside them, over units."""

    def __init__(self, entries: Sequence[Entry], baselines: bool = True) -> None:
        predictors = [SystemPredictor(ladder) for _, ladder in entries]
        rows = [Row(ladder.system.name, dict(variant), predictor, Seasoning(), True)
                for (variant, ladder), predictor in zip(entries, predictors, strict=True)]
        if baselines:
            counts = predictors[0].counts if predictors else _rated
            each = predictors[0].each if predictors else True
            shared, leads = (rows[0].collected.seasoning, False) if rows else (Seasoning(), True)
            rows += [Row("baseline", {}, Baseline(counts), shared, leads),
                     Row("win_rate", {}, WinRate(counts, each), shared, False)]
        self.rows = rows

    def feed(self, units: Iterable[RatedUnit]) -> None:
        """Apply ``units`` (the next ones of the log, in order); a book refusing a game raises
        its ``ValueError`` (the run is then spent)."""
        rows = self.rows
        for unit in units:
            for row in rows:
                row.feed(unit)

    def report(self) -> dict[str, Any]:
        return {"systems": [row.report() for row in self.rows]}


class PlainRun:
    """Each entry's plain predictions (``predictions`` of its system's plain replay) over plain
    log rows, and the two rows beside them: the same report as :class:`BooksRun` on the same
    log. Make one with :meth:`start`."""

    def __init__(self, entries: Sequence[Entry], predictors: Sequence[Any],
                 baselines: bool) -> None:
        self.predictors = predictors
        self.seasoning = Seasoning()
        self.collected = [Collected(self.seasoning)
                          for _ in range(len(entries) + 2 * baselines)]
        self.baselines = baselines
        self.wins: dict[str, float] = {}
        self.names: list[tuple[str, dict[str, Any]]] = [
            (ladder.system.name, dict(variant)) for variant, ladder in entries]
        if baselines:
            self.names += [("baseline", {}), ("win_rate", {})]

    @classmethod
    def start(cls, entries: Sequence[Entry], ids: Mapping[str, int],
              baselines: bool = True) -> PlainRun | None:
        """A run over a log whose players ``ids`` names (the mapping may grow later), or
        ``None`` when there is no entry or one of the systems has no plain predictions."""
        found = []
        for _, ladder in entries:
            plain = systems.plain_replay(ladder, ids)
            if plain is None or not callable(getattr(plain, "predictions", None)):
                return None
            found.append(plain)
        return cls(entries, found, baselines) if found else None

    def feed(self, rows: Sequence[LogRow]) -> None:
        """Apply ``rows`` (the next ones of the log, in order). Raises
        :class:`~server.api.NotPlain` at a row a system does not take (the run is then spent:
        evaluate the units through books)."""
        collected = self.collected
        for predictor, c in zip(self.predictors, collected, strict=False):
            c.ps.extend(predictor.predictions(rows))
        ys = [1.0 if r[6] > r[7] else 0.0 if r[6] < r[7] else 0.5 for r in rows]
        for c in collected:
            c.ys.extend(ys)
        flag = self.seasoning.flags.append
        played = self.seasoning.played
        base = collected[-2].ps.extend if self.baselines else None
        rates = collected[-1].ps.append if self.baselines else None
        wins = self.wins
        for row, y in zip(rows, ys, strict=True):
            a, b = row[3], row[4]
            na, nb = played.get(a, 0), played.get(b, 0)
            flag(na >= SEASONED and nb >= SEASONED)
            played[a], played[b] = na + 1, nb + 1
            if rates is not None:
                wa, wb = wins.get(a, 0.0), wins.get(b, 0.0)
                ra, rb = (wa + 1.0) / (na + 2.0), (wb + 1.0) / (nb + 2.0)
                rates(ra / (ra + rb))
                wins[a], wins[b] = wa + y, wb + 1.0 - y
        if base is not None:
            base([0.5] * len(rows))

    def report(self) -> dict[str, Any]:
        return {"systems": [c.report(system, variant)
                            for c, (system, variant) in zip(self.collected, self.names,
                                                            strict=True)]}
