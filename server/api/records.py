"""The records every side of the API shares: names, games and the units ladders apply."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,20}")
NAME_RULE = "1–20 of A-Z a-z 0-9 _ -"


def valid_name(name: str) -> bool:
    """Player names: 1–20 of ``A-Za-z0-9_-``, unique ignoring case."""
    return NAME_RE.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class Game:
    """One contest between two sides; a backgammon match counts as one game.

    ``length`` is the agreed match length (``None`` for an unlimited match);
    systems that do not play to a length ignore it. An unrated game keeps its
    reason and rates nothing.
    """

    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    score_a: int
    score_b: int
    played_on: date
    length: int | None = 1
    unrated_reason: str | None = None

    @property
    def players(self) -> tuple[str, ...]:
        return self.side_a + self.side_b

    @property
    def is_draw(self) -> bool:
        return self.score_a == self.score_b

    @property
    def a_won(self) -> bool:
        return self.score_a > self.score_b


@dataclass(frozen=True)
class RatedUnit:
    """What a ladder applies in one step: one live match, one event result rated as it comes,
    or one closed event's games. ``seq`` is its place in the order ladders were rated in."""

    ladder: str
    seq: int
    at: str
    games: tuple[Game, ...]
    player_ids: Mapping[str, int]
    match_id: int | None = None
    event_id: int | None = None

    @property
    def live(self) -> bool:
        """A live match (played in the lobby), not a result a director entered."""
        return self.event_id is None

    @property
    def cause(self) -> dict[str, int]:
        """What history shows as the cause: the match, the event, or both."""
        cause: dict[str, int] = {}
        if self.match_id is not None:
            cause["match"] = self.match_id
        if self.event_id is not None:
            cause["event"] = self.event_id
        assert cause
        return cause
