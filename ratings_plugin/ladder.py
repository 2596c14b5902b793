"""A ladder in memory: standings per player and the one place the systems are applied.

``matchlobby rate``, the server's event close and ``matchlobby replay`` all go
through :class:`LadderBook`, so the three can never disagree.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import date, timedelta
from typing import Any

import numpy as np

from ratings_plugin.games import Game
from ratings_plugin.systems import fibs, p4p
from ratings_plugin.systems.cas import combined, peklo
from ratings_plugin.systems.cas.dansa import DansaRating
from ratings_plugin.systems.cas.paluba import START as PALUBA_START

_CasRow = tuple[str, str, int, int]


@dataclass(frozen=True)
class LadderOptions:
    """A ladder's system and the per-ladder options RATINGS.md names."""

    system: str
    doubles: bool = False
    inactivity_days: int | None = 365
    fibs: fibs.FibsOptions = field(default_factory=fibs.FibsOptions)
    p4p: p4p.P4POptions = field(default_factory=p4p.P4POptions)

    def __post_init__(self) -> None:
        if self.system not in ("fibs", "p4p", "cas"):
            raise ValueError(f"unknown rating system {self.system!r}")
        if self.doubles and self.system != "p4p":
            raise ValueError("only P4P ladders can be doubles ladders")
        if self.inactivity_days is not None and self.inactivity_days < 1:
            raise ValueError("inactivity_days must be at least 1")

    @property
    def tail_corrections(self) -> bool:
        """Whether a correction replays only the units from the corrected one on (FIBS:
        ratings_plugin/tail.py) instead of the whole log."""
        return self.system == "fibs"


@dataclass(frozen=True, slots=True)
class Standing:
    """Everything the ladder knows about one player; unused fields keep defaults.

    ``rating`` is the displayed value: FIBS's float rating, P4P points, or the
    ČAS combined strength. ``games`` counts rated games (P4P's K and Dansa's K
    both read it).
    """

    player: str
    rating: float
    games: int = 0
    last_played: date | None = None
    experience: int = 0
    paluba: int = PALUBA_START
    dansa: int = 1500
    peklo: float = 1500.0


def fibs_value(s: Standing) -> fibs.FibsRating:
    return fibs.FibsRating(float(s.rating), s.experience)


class LadderBook:
    """Standings of one ladder, updated one event (or FIBS match) at a time.

    :meth:`compute` is pure with respect to the book (it only keeps the Peklo
    history it extended, for :meth:`accept` of the same games to adopt);
    :meth:`accept` stores its result. The server commits the result to the
    database between the two.
    """

    def __init__(self, options: LadderOptions) -> None:
        self.options = options
        self.standings: dict[str, Standing] = {}
        self.history = peklo.PekloHistory() if options.system == "cas" else None
        # compute()'s extended Peklo history, adopted by accept() for the same games
        self._pending: tuple[peklo.PekloHistory, int, list[_CasRow], peklo.PekloHistory] | None = None

    def new_standing(self, player: str) -> Standing:
        system = self.options.system
        if system == "fibs":
            return Standing(player, self.options.fibs.start_rating)
        if system == "p4p":
            return Standing(player, self.options.p4p.start_points)
        return Standing(player, 0)

    def get(self, player: str) -> Standing:
        return self.standings.get(player) or self.new_standing(player)

    def check_game(self, game: Game) -> None:
        """Reject a game this ladder cannot rate (raises ``ValueError``)."""
        system = self.options.system
        for side in (game.side_a, game.side_b):
            width = 2 if self.options.doubles else 1
            if len(side) != width:
                kind = "doubles" if self.options.doubles else "singles"
                raise ValueError(f"a side of this {kind} ladder has {width} player(s)")
        if set(game.side_a) & set(game.side_b):
            raise ValueError("a player cannot be on both sides")
        if len(set(game.players)) != len(game.players):
            raise ValueError("a player appears twice in one game")
        if game.score_a < 0 or game.score_b < 0:
            raise ValueError("scores cannot be negative")
        if system in ("fibs", "p4p") and game.is_draw and game.unrated_reason is None:
            raise ValueError(f"{system.upper()} has no draws: the scores must differ")
        if game.length is not None and game.length < 1:
            raise ValueError("the match length must be positive")

    def compute(self, games: Sequence[Game]) -> dict[str, Standing]:
        """New standings after ``games`` (one event, or one FIBS match).

        FIBS applies the games one by one; P4P and ČAS rate them as one batch
        from pre-event values. ČAS returns every player, since normalisation
        and Peklo move everyone; the others return only those who played.
        """
        for g in games:
            self.check_game(g)
        rated = [g for g in games if g.counts_for(self.options.system)]
        if not rated:
            return {}
        if self.options.system == "fibs":
            return self._compute_fibs(rated)
        if self.options.system == "p4p":
            return self._compute_p4p(rated)
        return self._compute_cas(rated)

    def accept(self, new: Mapping[str, Standing], games: Sequence[Game]) -> None:
        """Store what :meth:`compute` returned for ``games``."""
        self.standings.update(new)
        if self.history is not None:
            rows = _cas_rows(g for g in games if g.counts_for("cas"))
            pending, self._pending = self._pending, None
            if pending is not None and pending[0] is self.history and pending[1] == len(
                    self.history) and pending[2] == rows:
                self.history = pending[3]
            else:
                self.history = self.history.extended(rows)

    def apply(self, games: Sequence[Game]) -> dict[str, Standing]:
        """Compute and accept in one step; returns the new standings."""
        new = self.compute(games)
        self.accept(new, games)
        return new

    def _compute_fibs(self, games: Sequence[Game]) -> dict[str, Standing]:
        work: dict[str, Standing] = {}
        opts = self.options.fibs
        for g in games:
            a, b = g.side_a[0], g.side_b[0]
            sa, sb = work.get(a) or self.get(a), work.get(b) or self.get(b)
            assert g.length is not None
            if g.a_won:
                na, nb = fibs.rate_match(fibs_value(sa), fibs_value(sb), g.length, opts)
            else:
                nb, na = fibs.rate_match(fibs_value(sb), fibs_value(sa), g.length, opts)
            work[a] = _played(sa, na, g.played_on)
            work[b] = _played(sb, nb, g.played_on)
        return work

    def _compute_p4p(self, games: Sequence[Game]) -> dict[str, Standing]:
        before = {p: p4p.P4PRating(int(self.get(p).rating), self.get(p).games)
                  for g in games for p in g.players}
        after = p4p.rate_event(
            before, (p4p.P4PGame(g.side_a, g.side_b, g.a_won) for g in games), self.options.p4p
        )
        out: dict[str, Standing] = {}
        last = _last_dates(games)
        for p, r in after.items():
            s = self.get(p)
            out[p] = replace(s, rating=r.points, games=r.games,
                             last_played=_later(s.last_played, last[p]))
        return out

    def _compute_cas(self, games: Sequence[Game]) -> dict[str, Standing]:
        """The whole ladder after one event: Paluba and Dansa move the event's
        players, Peklo is re-solved over the history and everyone is renormalised.

        It runs over every player of the ladder on each close, so the
        combination works on arrays in the Peklo history's player order and
        the standings are built directly.
        """
        assert self.history is not None
        standings = self.standings
        rows = _cas_rows(games)
        before = {p: standings[p] for a, b, _, _ in rows for p in (a, b) if p in standings}
        state = combined.CasState(
            paluba={p: s.paluba for p, s in before.items()},
            dansa={p: DansaRating(s.dansa, s.games) for p, s in before.items()},
        )
        after = combined.rate_event(state, (combined.CasGame(*r) for r in rows))
        history = self.history.extended(rows)
        self._pending = (self.history, len(self.history), rows, history)
        names = history.names
        moved = after.dansa
        olds = [standings.get(p) for p in names]  # None: new to the ladder, so in the event
        newcomers = sum(p not in standings for p in moved)
        if len(names) != len(standings) + newcomers or sum(s is None for s in olds) != newcomers:
            raise ValueError("the ladder and its Peklo history disagree on the players")
        paluba = [0 if s is None else s.paluba for s in olds]
        dansa = [0 if s is None else s.dansa for s in olds]
        for p, d in moved.items():
            i = history.index[p]
            paluba[i], dansa[i] = after.paluba[p], d.rating
        elos = history.solution().elo
        strength = combined.strengths(np.array(paluba, dtype=np.float64),
                                      np.array(dansa, dtype=np.float64), elos).tolist()
        peklos = elos.tolist()
        out = _rerated(names, olds, strength, peklos, moved)
        last = _last_dates(games)
        for p, d in moved.items():
            i = history.index[p]
            s = olds[i]
            out[p] = Standing(p, strength[i], d.games,
                              last[p] if s is None else _later(s.last_played, last[p]),
                              0 if s is None else s.experience, paluba[i], dansa[i], peklos[i])
        return out

    def is_active(self, s: Standing, as_of: date | None) -> bool:
        """Active unless the player has no rated game in the ``inactivity_days`` before ``as_of``."""
        days = self.options.inactivity_days
        if days is None or as_of is None or s.last_played is None:
            return True
        return s.last_played >= as_of - timedelta(days=days)

    def rows(self, as_of: date | None = None) -> list[dict[str, Any]]:
        """The published ladder: active first, by rating, equal ratings sharing a rank."""
        return ranked_rows(self.options, self.standings.values(), lambda s: self.is_active(s, as_of))


_SET_SLOT = tuple(getattr(Standing, f.name).__set__ for f in fields(Standing))


def _rerated(names: Sequence[str], olds: Sequence[Standing | None], ratings: Sequence[int],
             peklos: Sequence[float], skip: Container[str]) -> dict[str, Standing]:
    """``replace(old, rating=r, peklo=e)`` for every player with an old standing not in ``skip``.

    A ČAS close builds one standing per player of the ladder. Each is filled
    slot by slot: the frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` for every field and takes about three times as long.
    The result is the same as ``Standing(...)`` (every slot set, no ``__post_init__``).
    """
    make = Standing.__new__
    player, rating, games, last_played, experience, paluba, dansa, peklo = _SET_SLOT
    out: dict[str, Standing] = {}
    for p, s, r, e in zip(names, olds, ratings, peklos, strict=True):
        if s is None or p in skip:
            continue
        n = make(Standing)
        player(n, p)
        rating(n, r)
        games(n, s.games)
        last_played(n, s.last_played)
        experience(n, s.experience)
        paluba(n, s.paluba)
        dansa(n, s.dansa)
        peklo(n, e)
        out[p] = n
    return out


def ranked_rows(
    options: LadderOptions, standings: Iterable[Standing], active: Any
) -> list[dict[str, Any]]:
    """Ladder rows in order; ``active`` tells whether a standing is active."""
    entries = [(s, bool(active(s))) for s in standings if s.games > 0]
    entries.sort(key=lambda e: (not e[1], -e[0].rating, e[0].player.casefold()))
    total = len(entries)
    rows: list[dict[str, Any]] = []
    rank = 0
    previous: tuple[bool, float] | None = None
    for i, (s, is_active) in enumerate(entries, start=1):
        if previous != (is_active, s.rating):
            rank, previous = i, (is_active, s.rating)
        rows.append(row_for(options, s, rank, total, is_active))
    return rows


def row_for(
    options: LadderOptions, s: Standing, rank: int, total: int, active: bool
) -> dict[str, Any]:
    """The ladder row object of DESIGN.md for one standing."""
    row: dict[str, Any] = {"rank": rank, "of": total, "player": s.player}
    if options.system == "fibs":
        row.update(rating=float(s.rating), games=s.games, active=active, experience=s.experience)
    elif options.system == "p4p":
        points = int(s.rating)
        row.update(rating=points, games=s.games, active=active, **{"class": p4p.player_class(points)})
    else:
        row.update(rating=int(s.rating), games=s.games, active=active,
                   paluba=s.paluba, dansa=s.dansa, peklo=s.peklo)
    return row


def _cas_rows(games: Iterable[Game]) -> list[_CasRow]:
    return [(g.side_a[0], g.side_b[0], g.score_a, g.score_b) for g in games]


def _last_dates(games: Iterable[Game]) -> dict[str, date]:
    last: dict[str, date] = {}
    for g in games:
        for p in g.players:
            last[p] = max(last.get(p, g.played_on), g.played_on)
    return last


def _later(a: date | None, b: date | None) -> date | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _played(s: Standing, after: fibs.FibsRating, when: date) -> Standing:
    """``s`` after one more FIBS match (one copy: a live match makes two per result)."""
    last = when if s.last_played is None else max(s.last_played, when)
    return replace(s, rating=after.rating, experience=after.experience, games=s.games + 1,
                   last_played=last)
