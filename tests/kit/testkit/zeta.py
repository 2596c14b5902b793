"""A rating system that no client knows, for the clients' tests: FIBS's numbers shown under
other columns (an integer score, an Elo-like real with one place, a boolean, a text).

It is configured like any ladder's system (a :class:`LadderConfig` in the test's
:class:`Config`), so a real server describes it in its ``ladders`` reply and serves its
rows; the clients must show it from that description alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from server.api import Column, LadderConfig
from server.api.registry import rating_systems
from server.config import Config, default_ladders

LADDER = "go"
COLUMNS = (
    Column("rating", "Score", "integer", help="Whole points of the rating."),
    Column("elo", "Elo", "real", 1, help="The rating with one place."),
    Column("ahead", "Ahead", "boolean", help="Above the start rating."),
    Column("tier", "Tier", "text"),
    Column("games", "Played", "integer"),
)


@dataclass(frozen=True)
class Zeta:
    """FIBS under another name and other columns; everything else is FIBS's."""

    base: Any
    name: str = "zeta"
    title: str = "Zeta (made up)"

    def __getattr__(self, attr: str) -> Any:
        if attr == "base":
            raise AttributeError(attr)
        return getattr(self.base, attr)

    def columns(self, options: Any) -> Sequence[Column]:
        return COLUMNS

    def row(self, options: Any, standing: Any, active: bool) -> dict[str, Any]:
        start = options.fibs.start_rating
        return {"rating": int(standing.rating), "games": standing.games, "active": active,
                "elo": float(standing.rating), "ahead": standing.rating > start,
                "tier": "upper" if standing.rating >= start else "lower"}


def zeta_ladder(name: str = LADDER) -> LadderConfig:
    fibs = rating_systems()["fibs"]
    return LadderConfig(name, Zeta(fibs), fibs.parse_options({}))


def with_zeta(config: Config) -> Config:
    """``config`` with the default ladders and a Zeta ladder after them."""
    return replace(config, ladders=(*default_ladders(), zeta_ladder()))
