"""A ladder in memory: standings per player and the one place the systems are applied.

``matchlobby rate``, the server's event close and ``matchlobby replay`` all go
through :class:`LadderBook`, so the three can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

import numpy as np

from ratings_plugin.games import Game
from ratings_plugin.systems import fibs, p4p
from ratings_plugin.systems.cas import combined, peklo
from ratings_plugin.systems.cas.dansa import DansaRating
from ratings_plugin.systems.cas.paluba import START as PALUBA_START


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

    :meth:`compute` is pure with respect to the book; :meth:`accept` stores its
    result. The server commits the result to the database between the two.
    """

    def __init__(self, options: LadderOptions) -> None:
        self.options = options
        self.standings: dict[str, Standing] = {}
        self.history = peklo.PekloHistory() if options.system == "cas" else None

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
            self.history.add(_cas_rows(g for g in games if g.counts_for("cas")))

    def apply(self, games: Sequence[Game]) -> dict[str, Standing]:
        """Compute and accept in one step; returns the new standings."""
        new = self.compute(games)
        self.accept(new, games)
        return new

    def _touch(self, s: Standing, games: int, when: date) -> Standing:
        last = when if s.last_played is None else max(s.last_played, when)
        return replace(s, games=s.games + games, last_played=last)

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
            work[a] = self._touch(replace(sa, rating=na.rating, experience=na.experience), 1,
                                  g.played_on)
            work[b] = self._touch(replace(sb, rating=nb.rating, experience=nb.experience), 1,
                                  g.played_on)
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
        assert self.history is not None
        state = combined.CasState(
            paluba={p: s.paluba for p, s in self.standings.items()},
            dansa={p: DansaRating(s.dansa, s.games) for p, s in self.standings.items()},
        )
        rows = _cas_rows(games)
        after = combined.rate_event(state, (combined.CasGame(*r) for r in rows))
        elos = _peklo_with(self.history, rows)
        ladder = combined.combine(
            after.paluba, {p: d.rating for p, d in after.dansa.items()}, elos
        )
        last = _last_dates(games)
        out: dict[str, Standing] = {}
        standings = self.standings
        for p, c in ladder.items():  # the whole ladder, so no dataclasses.replace here
            s = standings.get(p)
            played = last.get(p)
            out[p] = Standing(
                p, c.strength, after.dansa[p].games,
                played if s is None else _later(s.last_played, played),
                0 if s is None else s.experience, c.paluba, c.dansa, c.peklo,
            )
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


def _cas_rows(games: Iterable[Game]) -> list[tuple[str, str, int, int]]:
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


def _peklo_with(history: peklo.PekloHistory, extra: Sequence[tuple[str, str, int, int]]
                ) -> dict[str, float]:
    """Peklo over the history plus ``extra`` without changing the history."""
    names = list(history.names)
    index = dict(history.index)
    first, second, points = history.arrays()
    add_first: list[int] = []
    add_second: list[int] = []
    add_points: list[float] = []
    for a, b, sa, sb in extra:
        for p in (a, b):
            if p not in index:
                index[p] = len(names)
                names.append(p)
        add_first.append(index[a])
        add_second.append(index[b])
        add_points.append(peklo.points_of(sa, sb))
    sol = peklo.solve_peklo(
        np.concatenate([first, np.asarray(add_first, dtype=np.int64)]),
        np.concatenate([second, np.asarray(add_second, dtype=np.int64)]),
        np.concatenate([points, np.asarray(add_points, dtype=np.float64)]),
        len(names),
    )
    return peklo.elo_by_name(names, sol)
