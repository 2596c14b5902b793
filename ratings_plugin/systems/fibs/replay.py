"""A FIBS ladder replayed in one pass with plain numbers: ``matchlobby replay``'s fast path and a
correction's tail.

Books rate a ladder one unit at a time, with a ``Game``, two standings and
two changes per match; on a FIBS ladder of a million matches that is most of
a replay's time. Here the same log is applied with plain numbers: each
player's state is one small list, the formula is
:func:`ratings_plugin.systems.fibs.rate_ratings` (the one ``rate_match``
uses), and the history rows come as a stream, so the caller can write or
compare them without holding them all.

The result is the same, bit for bit, as a book's on the same log: the same
standings and the same history rows in the same order (the two players of a
match in ``str.casefold`` order, as ratings_plugin/book.py sorts them; before
= the start rating for a new player). A log row that a book would treat in
any other way (a doubles side, a player on both sides, a draw, negative
scores, an unrated or unlimited match, a bad length, a player with no id)
raises :class:`~server.api.NotPlain` before anything is produced for it, and
the caller replays the ladder through books instead. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import date
from typing import Any

from ratings_plugin.systems.fibs import rate_ratings, win_probability
from ratings_plugin.systems.fibs.standing import FibsLadder, FibsStanding
from server.api import HistoryPair, LogRow, NotPlain


class FibsReplay:
    """One FIBS ladder replayed from empty (or from :meth:`seed`'s standings).

    ``ids`` maps player names to ids (every player of the log must be in it).
    """

    def __init__(self, options: FibsLadder, ids: Mapping[str, int]) -> None:
        self.options = options
        self.ids = ids
        # name -> [rating, experience, games, last played (date), id, casefolded name]
        self._state: dict[str, list[Any]] = {}
        self._seeds: dict[str, FibsStanding] = {}  # seed(): their standings before the log

    def pairs(self, log: Iterable[LogRow]) -> Iterator[HistoryPair]:
        """Each match's two history rows as one tuple, without what they share twice (the
        rewrite binds a match's id, event and time once for its two rows)."""
        state = self._state
        get = state.get
        start = self.options.fibs.start_rating
        includes = self.options.fibs.experience_includes_match
        days: dict[str, date] = {}
        rate = rate_ratings
        for mid, eid, at, a, b, length, sa, sb, played_on, unrated in log:
            if (unrated is not None or length is None or length < 1 or a == b
                    or sa < 0 or sb < 0 or sa == sb or "+" in a or "+" in b):
                raise NotPlain(f"match {mid} is not a plain rated singles match")
            day = days.get(played_on)
            if day is None:
                day = days[played_on] = date.fromisoformat(played_on)
            pa = get(a)
            if pa is None:
                pa = self._new(a, start)
            pb = get(b)
            if pb is None:
                pb = self._new(b, start)
            ra, rb = pa[0], pb[0]
            if sa > sb:
                na, nb = rate(ra, pa[1], rb, pb[1], length, includes)
            else:
                nb, na = rate(rb, pb[1], ra, pa[1], length, includes)
            pa[0] = na
            pa[1] += length
            pa[2] += 1
            if day > pa[3]:
                pa[3] = day
            pb[0] = nb
            pb[1] += length
            pb[2] += 1
            if day > pb[3]:
                pb[3] = day
            if pb[5] < pa[5]:
                yield (pb[4], rb, nb, pa[4], ra, na, mid, eid, at)
            else:
                yield (pa[4], ra, na, pb[4], rb, nb, mid, eid, at)

    def predictions(self, log: Iterable[LogRow]) -> Iterator[float]:
        """Each row's probability that side A wins, from the standings before it (what the
        book's ``predict`` says there), the row then applied as :meth:`pairs` applies it: the
        fast path of ``matchlobby evaluate``. Raises :class:`~server.api.NotPlain` as
        :meth:`pairs` does."""
        state = self._state
        start = self.options.fibs.start_rating
        said: list[float] = []

        def peeked() -> Iterator[LogRow]:
            for row in log:
                pa, pb, length = state.get(row[3]), state.get(row[4]), row[5]
                said.append(win_probability(start if pa is None else pa[0],
                                            start if pb is None else pb[0],
                                            length if length is not None and length > 0 else 1))
                yield row

        for _ in self.pairs(peeked()):
            yield said.pop()

    def _new(self, name: str, start: float) -> list[Any]:
        pid = self.ids.get(name)
        if pid is None:
            raise NotPlain(f"no player id for {name!r}")
        entry: list[Any] = [start, 0, 0, date.min, pid, name.casefold()]
        self._state[name] = entry
        return entry

    def seed(self, standings: Iterable[FibsStanding]) -> None:
        """Start from these players' standings (a correction's book before its tail) instead
        of from empty; :meth:`standings` then keeps their other fields, as a book does.

        Raises :class:`~server.api.NotPlain` for a player with no id.
        """
        for s in standings:
            pid = self.ids.get(s.player)
            if pid is None:
                raise NotPlain(f"no player id for {s.player!r}")
            self._state[s.player] = [s.rating, s.experience, s.games,
                                     s.last_played or date.min, pid, s.player.casefold()]
            self._seeds[s.player] = s

    def standings(self) -> dict[str, FibsStanding]:
        """Every player's standing after the log, as a book would hold it."""
        out = {}
        for name, (rating, experience, games, last, _, _) in self._state.items():
            seed = self._seeds.get(name)
            day = None if last == date.min else last
            out[name] = FibsStanding(name, rating, games, day, experience) if seed is None else (
                replace(seed, rating=rating, games=games, last_played=day,
                        experience=experience))
        return out
