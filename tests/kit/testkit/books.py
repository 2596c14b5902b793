"""A rating system's own book driven by plain games, as ``matchlobby rate`` drives it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ratings_plugin.book import ranked_rows
from server.api import LadderConfig, RatedUnit
from server.api.registry import rating_systems


class LadderBook:
    """A system's own book (found by entry point, as the lobby finds it), fed plain games: each
    list of games is one unit (an event, or one match), as ``matchlobby rate`` feeds it."""

    def __init__(self, system: str, **options: Any) -> None:
        found = rating_systems()[system]
        self.ladder = LadderConfig(system, found, found.parse_options(options))
        self.system = found
        self.options = self.ladder.options
        self.book = found.new_book(self.options)
        self.seq = 0

    @property
    def standings(self) -> dict[str, Any]:
        return self.book.standings

    @property
    def history(self) -> Any:
        return getattr(self.book, "history", None)

    def new_standing(self, player: str) -> Any:
        return self.book.new_standing(player)

    def unit(self, games: Sequence[Any], live: bool = False) -> RatedUnit:
        self.seq += 1
        first = min(g.played_on for g in games) if games else datetime(2026, 1, 1).date()
        return RatedUnit("ladder", self.seq, f"{first.isoformat()}T00:00:00Z", tuple(games), {},
                         match_id=self.seq if live else None, event_id=None if live else self.seq)

    def compute(self, games: Sequence[Any]) -> dict[str, Any]:
        return dict(self.book.compute(self.unit(games)))

    def accept(self, new: dict[str, Any], games: Sequence[Any]) -> None:
        self.book.accept(new, self.unit(games))

    def apply(self, games: Sequence[Any]) -> dict[str, Any]:
        unit = self.unit(games)
        new = dict(self.book.compute(unit))
        self.book.accept(new, unit)
        return new

    def check_game(self, game: Any) -> None:
        self.system.check_game(self.options, game)

    def rows(self, as_of: Any = None) -> list[dict[str, Any]]:
        return ranked_rows(self.ladder, self.standings.values(), as_of)
