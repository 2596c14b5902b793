"""``evaluate`` on plain log rows: the fast path for a ladder of single matches.

A system whose plain replay (the optional ``FastReplay.plain_replay``) also offers
``predictions(log) -> Iterator[float]`` (each row's probability that side A
wins from the standings before it, the row then applied; :class:`NotPlain` for
a row it does not take, as ``pairs``) is evaluated from the log's rows with no
book, no ``Game`` and no unit: the same predictions bit for bit, and the same
report as :func:`ratings_plugin.evaluation.evaluate`. Every row it takes is a
rated, scored game. The log is read once: each system's predictions are drawn
a row at a time beside the baselines'. Every row is a unit of one game, so the
win rates learn after each row whatever the first system (as the books' path
has them learn after each game or after each unit, the same here).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast

from ratings_plugin.evaluation.report import SEASONED, Collected, Seasoning
from server.api import LadderConfig, LogRow, NotPlain, systems


class PlainPredictions(Protocol):
    def predictions(self, log: Iterable[LogRow]) -> Iterator[float]: ...


def plain_predictors(entries: Sequence[tuple[dict[str, Any], LadderConfig]],
                     ids: Mapping[str, int]) -> list[PlainPredictions] | None:
    """Each entry's plain predictions, or ``None`` when one of the systems has none."""
    found: list[PlainPredictions] = []
    for _, ladder in entries:
        plain = systems.plain_replay(ladder, ids)
        if plain is None or not callable(getattr(plain, "predictions", None)):
            return None
        found.append(cast(PlainPredictions, plain))
    return found


def evaluate_plain(entries: Sequence[tuple[dict[str, Any], LadderConfig]],
                   log: Iterable[LogRow], ids: Mapping[str, int],
                   baselines: bool = True) -> dict[str, Any] | None:
    """The report :func:`~ratings_plugin.evaluation.evaluate` gives on the same log, or
    ``None`` when a system has no plain predictions or refuses a row (:class:`NotPlain`):
    then evaluate the ladder's units through books. ``ids`` maps every player of the log to
    an id, as ``plain_replay`` needs."""
    predictors = plain_predictors(entries, ids)
    if predictors is None or not entries:
        return None
    current: list[LogRow] = []

    def rows() -> Iterator[LogRow]:
        while True:
            yield current[0]

    streams = [p.predictions(rows()) for p in predictors]
    seasoning = Seasoning()
    collected = [Collected(seasoning) for _ in range(len(entries) + 2 * baselines)]
    said = [c.ps.append for c in collected[:len(entries)]]
    outcomes = [c.ys.append for c in collected]
    flag = seasoning.flags.append
    played = seasoning.played
    wins: dict[str, float] = {}
    base = collected[-2].ps.append if baselines else None
    rates = collected[-1].ps.append if baselines else None
    current.append(())  # type: ignore[arg-type]
    try:
        for row in log:
            current[0] = row
            for stream, put in zip(streams, said, strict=True):
                put(next(stream))
            a, b, sa, sb = row[3], row[4], row[6], row[7]
            y = 1.0 if sa > sb else 0.0 if sa < sb else 0.5
            for put in outcomes:
                put(y)
            na, nb = played.get(a, 0), played.get(b, 0)
            flag(na >= SEASONED and nb >= SEASONED)
            played[a], played[b] = na + 1, nb + 1
            if base is not None and rates is not None:
                base(0.5)
                wa, wb = wins.get(a, 0.0), wins.get(b, 0.0)
                ra, rb = (wa + 1.0) / (na + 2.0), (wb + 1.0) / (nb + 2.0)
                rates(ra / (ra + rb))
                wins[a], wins[b] = wa + y, wb + 1.0 - y
    except NotPlain:
        return None
    names: list[tuple[str, dict[str, Any]]] = [
        (ladder.system.name, dict(variant)) for variant, ladder in entries]
    if baselines:
        names += [("baseline", {}), ("win_rate", {})]
    return {"systems": [c.report(system, variant)
                        for c, (system, variant) in zip(collected, names, strict=True)]}
