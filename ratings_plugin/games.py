"""Plain game records shared by the results file, the ladder book and the server."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,20}")
SYSTEMS = ("fibs", "p4p", "cas")


def valid_name(name: str) -> bool:
    """Player names: 1–20 of ``A-Za-z0-9_-`` (DESIGN.md)."""
    return NAME_RE.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class Game:
    """One contest between two sides; a FIBS match counts as one game.

    ``length`` is the FIBS match length (``None`` for an unlimited match);
    other systems ignore it. An unrated game keeps its reason and rates nothing.
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

    def counts_for(self, system: str) -> bool:
        """Whether this game changes ratings in ``system`` at all."""
        if self.unrated_reason is not None:
            return False
        return not (system == "fibs" and self.length is None)
