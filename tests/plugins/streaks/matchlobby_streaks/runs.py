"""The rule: a rated win extends a player's streak; a loss or a draw ends it.

Only games that move the ladder's ratings count (its system says which:
an unrated or unlimited game neither extends nor ends a streak). In a
doubles game both players of a side share its result. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass

from server.api import LadderConfig, RatedUnit


@dataclass
class Streak:
    current: int = 0
    best: int = 0

    def record(self, won: bool) -> None:
        self.current = self.current + 1 if won else 0
        self.best = max(self.best, self.current)


def results(ladder: LadderConfig, unit: RatedUnit) -> Iterator[tuple[str, bool]]:
    """Every player of the unit's counted games, game by game, and whether they won."""
    for game in unit.games:
        if not ladder.system.counts(ladder.options, game):
            continue
        b_won = game.score_b > game.score_a
        for player in game.side_a:
            yield player, game.a_won
        for player in game.side_b:
            yield player, b_won


def advance(streaks: MutableMapping[int, Streak], played: Iterable[tuple[int, bool]]) -> set[int]:
    """Apply results (player id, won) in order; returns the ids whose streak was touched
    (a missing one starts at nothing)."""
    touched = set()
    for player_id, won in played:
        streaks.setdefault(player_id, Streak()).record(won)
        touched.add(player_id)
    return touched
