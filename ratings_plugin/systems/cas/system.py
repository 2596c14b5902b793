"""The ČAS ladder as a rating system of the lobby: an event is one unit, rated when it closes.

Every close re-solves Peklo over the whole history and renormalises the
three methods over the whole ladder, so a close returns a standing for every
player of the ladder, and players who did not play may move.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ratings_plugin.systems.cas import dansa
from ratings_plugin.systems.cas.dansa import DansaRating
from ratings_plugin.systems.cas.paluba import START as PALUBA_START
from server.api import (
    BookBase,
    Column,
    Game,
    LadderOptions,
    RatedUnit,
    RatingSystem,
    StandingBase,
    SystemBase,
)
from server.api.rules import last_dates, later

if TYPE_CHECKING:
    from ratings_plugin.systems.cas import peklo

PEKLO_START = 1500.0
PREDICTIONS = ("peklo", "dansa")
_CasRow = tuple[str, str, int, int]


@dataclass(frozen=True)
class CasLadder(LadderOptions):
    """A ČAS ladder's options: which of its methods says how likely a player is to win
    (``prediction``: Peklo's Bradley–Terry strength, the default, or Dansa's expected score);
    the ratings do not depend on it."""

    prediction: str = "peklo"


@dataclass(frozen=True, slots=True)
class CasStanding(StandingBase):
    """A player's combined strength (``rating``) and its three components."""

    rating: int
    paluba: int = PALUBA_START
    dansa: int = dansa.START
    peklo: float = PEKLO_START


def cas_rows(games: Sequence[Game]) -> list[_CasRow]:
    return [(g.side_a[0], g.side_b[0], g.score_a, g.score_b) for g in games]


class CasBook(BookBase[CasLadder, CasStanding]):
    """Standings and the whole history of rated games, which Peklo solves at every close.

    :meth:`compute` keeps the history it extended, for :meth:`accept` of the
    same games to adopt instead of extending it again.
    """

    def __init__(self, system: Cas, options: CasLadder) -> None:
        # Peklo and the combination need numpy, imported with the first ČAS book: a process
        # that rates no ČAS ladder (a client, `rate fibs`, `user add`) starts without it.
        from ratings_plugin.systems.cas import peklo

        super().__init__(system, options)
        self.history = peklo.PekloHistory()
        self._pending: tuple[peklo.PekloHistory, int, list[_CasRow], peklo.PekloHistory] | None \
            = None

    def new_standing(self, player: str) -> CasStanding:
        return CasStanding(player, 0)

    def load_history(self, rows: Sequence[_CasRow]) -> None:
        """The rated games of every closed event so far, in order (at start-up)."""
        self.history.add(rows)

    def compute(self, unit: RatedUnit) -> dict[str, CasStanding]:
        """The whole ladder after one event: Paluba and Dansa move the event's players, Peklo is
        solved again over the history and everyone is renormalised.

        It runs over every player of the ladder on each close, so the
        combination works on arrays in the Peklo history's player order and
        the standings are built directly.
        """
        import numpy as np

        from ratings_plugin.systems.cas import combined

        system, ladder = self.system, self.options
        for g in unit.games:
            system.check_game(ladder, g)
        games = [g for g in unit.games if system.counts(ladder, g)]
        if not games:
            return {}
        standings = self.standings
        rows = cas_rows(games)
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
        dansas = [0 if s is None else s.dansa for s in olds]
        for p, d in moved.items():
            i = history.index[p]
            paluba[i], dansas[i] = after.paluba[p], d.rating
        elos = history.solution().elo
        strength = combined.strengths(np.array(paluba, dtype=np.float64),
                                      np.array(dansas, dtype=np.float64), elos).tolist()
        peklos = elos.tolist()
        out = _rerated(names, olds, strength, peklos, moved)
        last = last_dates(games)
        for p, d in moved.items():
            i = history.index[p]
            s = olds[i]
            out[p] = CasStanding(p, strength[i], d.games,
                                 last[p] if s is None else later(s.last_played, last[p]),
                                 paluba[i], dansas[i], peklos[i])
        return out

    def predict(self, game: Game) -> float:
        """The ladder's ``prediction`` (:meth:`Cas.expectation`) of the two standings now; a
        newcomer counts at each method's start."""
        a, b = (self.standings.get(p) or self.new_standing(p)
                for p in (game.side_a[0], game.side_b[0]))
        return SYSTEM.expectation(self.options, a, b, game.length)

    def accept(self, new: Mapping[str, CasStanding], unit: RatedUnit) -> None:
        self.standings.update(new)
        rows = cas_rows([g for g in unit.games if self.system.counts(self.options, g)])
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] is self.history and pending[1] == len(
                self.history) and pending[2] == rows:
            self.history = pending[3]
        else:
            self.history = self.history.extended(rows)


_SET_SLOT = tuple(getattr(CasStanding, f.name).__set__ for f in fields(CasStanding))


def _rerated(names: Sequence[str], olds: Sequence[CasStanding | None], ratings: Sequence[int],
             peklos: Sequence[float], skip: Container[str]) -> dict[str, CasStanding]:
    """``replace(old, rating=r, peklo=e)`` for every player with an old standing not in ``skip``.

    A ČAS close builds one standing per player of the ladder. Each is filled
    slot by slot: the frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` for every field and takes about three times as long.
    The result is the same as ``CasStanding(...)`` (every slot set, no ``__post_init__``).
    """
    make = CasStanding.__new__
    player, rating, games, last_played, paluba, dansa_, peklo_ = _SET_SLOT
    out: dict[str, CasStanding] = {}
    for p, s, r, e in zip(names, olds, ratings, peklos, strict=True):
        if s is None or p in skip:
            continue
        n = make(CasStanding)
        player(n, p)
        rating(n, r)
        games(n, s.games)
        last_played(n, s.last_played)
        paluba(n, s.paluba)
        dansa_(n, s.dansa)
        peklo_(n, e)
        out[p] = n
    return out


class Cas(SystemBase[CasLadder, CasStanding]):
    """The ČAS ladder; Peklo is its shared field, solved over the whole history (which its
    books load at start)."""

    name = "cas"
    title = "ČAS"
    draws = True
    shared_field = "peklo"

    keys = frozenset({"prediction"})

    def read_options(self, table: Mapping[str, Any]) -> CasLadder:
        prediction = table.get("prediction", "peklo")
        if prediction not in PREDICTIONS:
            raise ValueError("prediction must be 'peklo' or 'dansa'")
        return CasLadder(prediction=prediction)

    def new_book(self, options: CasLadder) -> CasBook:
        return CasBook(self, options)

    def initial_rating(self, options: CasLadder) -> float | None:
        """None: a newcomer has no strength until the ladder is renormalised with them."""
        return None

    def columns(self, options: CasLadder) -> Sequence[Column]:
        return (Column("rating", "Strength", "integer",
                       help="0–1000: the mean of Paluba, Dansa and Peklo, each scaled so that "
                            "the ladder's lowest is 0 and its highest 1000. Every close "
                            "rescales, so a player can move without playing."),
                Column("paluba", "Paluba", "integer", help="Short-term form, from the scores."),
                Column("dansa", "Dansa", "integer", help="Medium-term form (NSA-style rating)."),
                Column("peklo", "Peklo", "real", 1,
                       help="Long-term strength fitted to every game ever rated."),
                Column("games", "Games", "integer"))

    def expectation(self, options: CasLadder, a: CasStanding, b: CasStanding,
                    length: int | None) -> float:
        """Peklo's strengths as a Bradley–Terry probability (Peklo's Elo form is
        1500 + 200·log₂(odds against a 1500 player), so A beats B with
        1 / (1 + 2^((Peklo_B − Peklo_A) / 200))), or with ``prediction = "dansa"`` Dansa's
        expected score, the normal expectation at its scale."""
        if options.prediction == "dansa":
            return dansa.expectation(a.dansa, b.dansa)
        return float(1.0 / (1.0 + 2.0 ** ((b.peklo - a.peklo) / 200.0)))


SYSTEM: RatingSystem = Cas()
