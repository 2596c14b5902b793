"""Typed views of the replies clients depend on (DESIGN.md "Shapes")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LadderRow:
    rank: int
    of: int
    player: str
    rating: float
    games: int
    active: bool
    extras: dict[str, Any] = field(default_factory=dict)
    ladder: str | None = None
    system: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LadderRow:
        known = {"rank", "of", "player", "rating", "games", "active", "ladder", "system"}
        return cls(d["rank"], d["of"], d["player"], d["rating"], d["games"], d["active"],
                   {k: v for k, v in d.items() if k not in known}, d.get("ladder"),
                   d.get("system"))


@dataclass(frozen=True)
class Ratings:
    player: str
    ratings: list[LadderRow]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ratings:
        return cls(d["player"], [LadderRow.from_dict(r) for r in d["ratings"]])

    def in_ladder(self, ladder: str) -> LadderRow | None:
        return next((r for r in self.ratings if r.ladder == ladder), None)


@dataclass(frozen=True)
class Whois(Ratings):
    online: bool = False
    status: str = "offline"
    last_login: str | None = None
    role: str = "player"
    matches: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Whois:
        return cls(d["player"], [LadderRow.from_dict(r) for r in d["ratings"]], d["online"],
                   d["status"], d.get("last_login"), d.get("role", "player"), d["matches"])


@dataclass(frozen=True)
class Ladder:
    ladder: str
    system: str
    total: int
    players: list[LadderRow]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ladder:
        return cls(d["ladder"], d["system"], d["total"],
                   [LadderRow.from_dict(r) for r in d["players"]])


@dataclass(frozen=True)
class RatingChange:
    player: str
    before: float | None
    after: float
    change: float | None


@dataclass(frozen=True)
class MatchFinished:
    match: int
    ladder: str
    length: int | str
    winner: str
    how: str
    rated: bool
    changes: list[RatingChange]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MatchFinished:
        return cls(d["match"], d["ladder"], d["length"], d["winner"], d["how"],
                   d.get("rated", True),
                   [RatingChange(c["player"], c["before"], c["after"], c["change"])
                    for c in d["changes"]])

    def change_of(self, player: str) -> RatingChange:
        return next(c for c in self.changes if c.player == player)
