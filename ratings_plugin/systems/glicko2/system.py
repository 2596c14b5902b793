"""Glicko-2 as a rating system of the lobby (RATINGS.md §5).

A live match is one rating period for its two players, rated when it ends; an
event is one period for everyone in it, rated when it closes. Before a period
each participant's RD grows with the time since their last rated game: by
elapsed time (seconds / 86,400) between two live matches, by whole calendar
days otherwise (an event's period starts on the day of its first game).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from ratings_plugin.systems.glicko2 import Glicko, GlickoOptions, idle, rate, win_probability
from server.api import (
    BookBase,
    Column,
    LadderOptions,
    RatedUnit,
    RatingSystem,
    StandingBase,
    SystemBase,
)
from server.api.rules import last_dates, later, number

SECONDS_A_DAY = 86_400.0


@dataclass(frozen=True)
class GlickoLadder(LadderOptions):
    glicko: GlickoOptions = field(default_factory=GlickoOptions)


@dataclass(frozen=True, slots=True)
class GlickoStanding(StandingBase):
    """Rating, RD and volatility after the player's last period; ``last_at`` is when their last
    live match ended (``None`` when their last period was an event)."""

    rd: float = 350.0
    volatility: float = 0.06
    last_at: str | None = None

    @property
    def values(self) -> Glicko:
        return Glicko(self.rating, self.rd, self.volatility)


def _moment(at: str) -> datetime:
    return datetime.fromisoformat(at)


class GlickoBook(BookBase[GlickoLadder, GlickoStanding]):
    def new_standing(self, player: str) -> GlickoStanding:
        o = self.options.glicko
        return GlickoStanding(player, o.start_rating, rd=o.start_rd,
                              volatility=o.start_volatility)

    def _days_away(self, s: GlickoStanding, unit: RatedUnit, first_day: date) -> float:
        if s.last_played is None:
            return 0.0
        if unit.live and s.last_at is not None:
            seconds = (_moment(unit.at) - _moment(s.last_at)).total_seconds()
            return max(0.0, seconds / SECONDS_A_DAY)
        return float(max(0, (first_day - s.last_played).days))

    def compute(self, unit: RatedUnit) -> dict[str, GlickoStanding]:
        """One rating period: everyone from their values before it, after the idle step."""
        system, ladder = self.system, self.options
        for g in unit.games:
            system.check_game(ladder, g)
        games = [g for g in unit.games if system.counts(ladder, g)]
        if not games:
            return {}
        first_day = min(g.played_on for g in games)
        options = self.options.glicko
        before: dict[str, GlickoStanding] = {}
        start: dict[str, Glicko] = {}
        for g in games:
            for p in g.players:
                if p not in before:
                    s = self.standings.get(p) or self.new_standing(p)
                    before[p] = s
                    start[p] = idle(s.values, self._days_away(s, unit, first_day), options)
        results: dict[str, list[tuple[Glicko, float]]] = {p: [] for p in before}
        for g in games:
            a, b = g.side_a[0], g.side_b[0]
            score = 0.5 if g.is_draw else 1.0 if g.a_won else 0.0
            results[a].append((start[b], score))
            results[b].append((start[a], 1.0 - score))
        last = last_dates(games)
        out: dict[str, GlickoStanding] = {}
        for p, s in before.items():
            new = rate(start[p], results[p], options.tau)
            out[p] = GlickoStanding(p, new.rating, s.games + len(results[p]),
                                    later(s.last_played, last[p]), new.rd, new.volatility,
                                    unit.at if unit.live else None)
        return out


class Glicko2(SystemBase[GlickoLadder, GlickoStanding]):
    name = "glicko2"
    title = "Glicko-2"
    live_matches = True
    draws = True
    keys = frozenset({"tau", "start_rating", "start_rd", "start_volatility", "periods_per_day",
                      "provisional_rd"})

    def read_options(self, table: Mapping[str, Any]) -> GlickoLadder:
        d = GlickoOptions()
        return GlickoLadder(glicko=GlickoOptions(
            tau=number(table, "tau", d.tau),
            start_rating=number(table, "start_rating", d.start_rating),
            start_rd=number(table, "start_rd", d.start_rd),
            start_volatility=number(table, "start_volatility", d.start_volatility),
            periods_per_day=number(table, "periods_per_day", d.periods_per_day),
            provisional_rd=number(table, "provisional_rd", d.provisional_rd)))

    def new_book(self, options: GlickoLadder) -> GlickoBook:
        return GlickoBook(self, options)

    def expectation(self, options: GlickoLadder, a: GlickoStanding, b: GlickoStanding,
                    length: int | None) -> float:
        """Glicko-2's expectation with both players' RDs, as they stand after their last
        period (no idle growth is added for the time until the game)."""
        return win_probability(a.values, b.values)

    def columns(self, options: GlickoLadder) -> Sequence[Column]:
        return (Column("rating", "Rating", "real", 2),
                Column("rd", "RD", "real", 2,
                       help="Rating deviation: how uncertain the rating is; it grows while a "
                            "player is away."),
                Column("provisional", "Provisional", "boolean",
                       help=f"RD above {options.glicko.provisional_rd:g}: too few recent games "
                            "for the rating to be trusted."),
                Column("games", "Games", "integer"))

    def row(self, options: GlickoLadder, s: GlickoStanding, active: bool) -> dict[str, Any]:
        return {"rating": s.rating, "games": s.games, "active": active, "rd": s.rd,
                "volatility": s.volatility, "provisional": s.rd > options.glicko.provisional_rd}


SYSTEM: RatingSystem = Glicko2()
