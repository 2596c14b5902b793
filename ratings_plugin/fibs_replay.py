"""A FIBS ladder rebuilt from its log in one pass: the fast path of ``matchlobby replay`` and of
a correction's tail (:func:`replay_units`).

:func:`ratings_plugin.plugin.replay_ladder` rebuilds any ladder through
:class:`~ratings_plugin.ladder.LadderBook`, one ``RatedUnit`` at a time, with a
``Game``, two ``Standing`` objects and two ``Change`` objects per match. On a
FIBS ladder of a million matches that is most of the replay's time. Here the
same log is applied with plain numbers: each player's state is one small
list, the formula is :func:`ratings_plugin.systems.fibs.rate_ratings` (the one
``rate_match`` uses), and the history rows are produced as a stream, so the
caller can write or compare them without holding them all.

The result is the same, bit for bit, as ``replay_ladder`` on the same log:
the same ratings rows and the same history rows in the same order (the two
players of a match in ``str.casefold`` order, as :func:`rate_unit` sorts
them; before = the start rating for a new player). A log row that the generic
path would treat in any other way — a doubles side, a player on both sides,
a draw, negative scores, an unrated or unlimited match, a bad length, a
player with no id — raises :class:`NotPlainFibs` before anything is produced
for it, and the caller replays the ladder the generic way instead (which
rates it, skips it or fails exactly as before). A correction replays its tail
from the standings before it (:meth:`FibsReplay.seed`) with the same result as
``replay_ladder`` from a book holding them. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from ratings_plugin.ladder import LadderBook, LadderOptions, Standing
from ratings_plugin.plugin import HistoryRow, RatingRow, rating_row, replay_ladder
from ratings_plugin.systems.fibs import rate_ratings
from server.domain import RatedUnit

# One logged FIBS match, as server.log.fibs_log reads it (scores already
# resolved from the winner when the match has none, as game_from_row does):
# match id, event id, finished at, side A, side B, length, score A, score B,
# played on (ISO date), unrated reason.
FibsLogRow = tuple[int, int | None, str, str, str, int | None, int, int, str, str | None]
# The two history rows of one match (FibsReplay.pairs): the first player's id, rating before and
# after (the two in str.casefold order of their names), the second's, then the match's id,
# event id and finished at.
HistoryPair = tuple[int, float, float, int, float, float, int, int | None, str]


class NotPlainFibs(Exception):
    """A log row that the fast path does not rate: replay the ladder the generic way."""


class FibsReplay:
    """One FIBS ladder replayed from empty (or from :meth:`seed`'s standings): :meth:`history`
    streams, then :meth:`rating_rows`.

    ``ids`` maps player names to ids (every player of the log must be in it).
    """

    def __init__(self, ladder: str, options: LadderOptions, ids: Mapping[str, int]) -> None:
        if options.system != "fibs" or options.doubles:
            raise ValueError("FibsReplay replays singles FIBS ladders only")
        self.ladder = ladder
        self.options = options
        self.ids = ids
        # name -> [rating, experience, games, last played (date), id, casefolded name]
        self._state: dict[str, list[Any]] = {}
        self._seeds: dict[str, Standing] = {}  # seed(): their standings before the log

    def history(self, log: Iterable[FibsLogRow]) -> Iterator[HistoryRow]:
        """The history rows of ``log`` (rated matches in ``seq`` order), two per match.

        Raises :class:`NotPlainFibs` at the first row the generic path would
        not rate as a plain singles match.
        """
        ladder = self.ladder
        for first, before1, after1, second, before2, after2, mid, eid, at in self.pairs(log):
            yield (ladder, first, before1, after1, mid, eid, at)
            yield (ladder, second, before2, after2, mid, eid, at)

    def pairs(self, log: Iterable[FibsLogRow]) -> Iterator[HistoryPair]:
        """:meth:`history`'s two rows of each match as one tuple, without what they share twice.

        For the rewrite, which binds the ladder once a statement and a
        match's id, event and time once for its two rows.
        """
        state = self._state
        get = state.get
        start = self.options.fibs.start_rating
        includes = self.options.fibs.experience_includes_match
        days: dict[str, date] = {}
        rate = rate_ratings
        for mid, eid, at, a, b, length, sa, sb, played_on, unrated in log:
            if (unrated is not None or length is None or length < 1 or a == b
                    or sa < 0 or sb < 0 or sa == sb or "+" in a or "+" in b):
                raise NotPlainFibs(f"match {mid} is not a plain rated singles match")
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

    def _new(self, name: str, start: float) -> list[Any]:
        pid = self.ids.get(name)
        if pid is None:
            raise NotPlainFibs(f"no player id for {name!r}")
        entry: list[Any] = [start, 0, 0, date.min, pid, name.casefold()]
        self._state[name] = entry
        return entry

    def seed(self, standings: Iterable[Standing]) -> None:
        """Start from these players' standings (a correction's book before its tail) instead
        of from empty; :meth:`standings` then keeps their other fields, as ``LadderBook`` does.

        Raises :class:`NotPlainFibs` for a player with no id.
        """
        for s in standings:
            pid = self.ids.get(s.player)
            if pid is None:
                raise NotPlainFibs(f"no player id for {s.player!r}")
            self._state[s.player] = [s.rating, s.experience, s.games,
                                     s.last_played or date.min, pid, s.player.casefold()]
            self._seeds[s.player] = s

    def standings(self) -> dict[str, Standing]:
        """Every player's standing after the log, as ``LadderBook`` would hold it."""
        out = {}
        for name, (rating, experience, games, last, _, _) in self._state.items():
            seed = self._seeds.get(name)
            day = None if last == date.min else last
            out[name] = Standing(name, rating, games, day, experience) if seed is None else (
                replace(seed, rating=rating, games=games, last_played=day,
                        experience=experience))
        return out

    def rating_rows(self) -> list[RatingRow]:
        """The ``ratings`` rows after the log, sorted as ``matchlobby replay`` writes them."""
        return sorted(rating_row(self.ladder, s, self.ids) for s in self.standings().values())


def unit_rows(units: Iterable[RatedUnit]) -> Iterator[FibsLogRow]:
    """The log rows ``server.log.fibs_log`` would read for single-match ``units`` (built by
    ``server.log.ladder_units``: the scores already resolved from the winner)."""
    for unit in units:
        if unit.match_id is None or len(unit.games) != 1:
            raise NotPlainFibs(f"unit {unit.seq} is not a single match")
        g = unit.games[0]
        yield (unit.match_id, unit.event_id, unit.at, "+".join(g.side_a), "+".join(g.side_b),
               g.length, g.score_a, g.score_b, g.played_on.isoformat(), g.unrated_reason)


def replay_units(name: str, options: LadderOptions, units: Sequence[RatedUnit],
                 ids: Mapping[str, int], book: LadderBook) -> tuple[LadderBook, list[HistoryRow]]:
    """:func:`~ratings_plugin.plugin.replay_ladder` of ``units`` applied to ``book`` (which is
    changed), bit for bit, through :class:`FibsReplay` on a plain singles FIBS ladder.

    For a correction's tail: a few µs a match instead of ~15 µs through
    ``LadderBook`` (7.8 s of a void 500,000 matches from the end of the bench's
    ladder). Any other ladder, or a unit the fast path does not take, goes
    through ``replay_ladder`` itself, from ``book`` as it was.
    """
    if options.system == "fibs" and not options.doubles:
        replay = FibsReplay(name, options, ids)
        try:
            replay.seed(book.standings.values())
            history = list(replay.history(unit_rows(units)))
        except NotPlainFibs:
            pass
        else:
            book.standings.update(replay.standings())
            return book, history
    return replay_ladder(name, options, units, ids, book)
