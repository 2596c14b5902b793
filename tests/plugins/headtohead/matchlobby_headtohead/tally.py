"""The count: the games in which A and B were on opposite sides. Pure: no I/O.

The caller chooses the games (the plugin: those that move the ladder's
ratings, as its system says); a game whose scores are level is a draw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

from server.api import Game


@dataclass
class Record:
    """A's and B's wins against each other, their draws, and the day of their last game."""

    wins: dict[str, int] = field(default_factory=dict)
    draws: int = 0
    last: date | None = None


def facing(game: Game, a: str, b: str) -> str | None:
    """``"a"`` when A played on side A against B, ``"b"`` the other way round, else ``None``."""
    if a in game.side_a and b in game.side_b:
        return "a"
    if b in game.side_a and a in game.side_b:
        return "b"
    return None


def record(games: Iterable[Game], a: str, b: str) -> Record | None:
    """A's and B's record over ``games`` (``None``: they never met in them)."""
    found = Record(wins={a: 0, b: 0})
    met = False
    for game in games:
        side = facing(game, a, b)
        if side is None:
            continue
        met = True
        found.last = game.played_on if found.last is None else max(found.last, game.played_on)
        if game.is_draw:
            found.draws += 1
            continue
        a_side_won = game.a_won
        winner = a if (side == "a") == a_side_won else b
        found.wins[winner] += 1
    return found if met else None
