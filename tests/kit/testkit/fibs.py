"""The FIBS formula of RATINGS.md §1, written out independently of the server, and the checks
of what a server shows against it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clients import LobbyClient
from clients.models import RatingChange


def fibs_changes(p1: float, e1: int, p2: float, e2: int, n: int, first_won: bool
                 ) -> tuple[float, float]:
    """Δ for player 1 and player 2 after a rated match of length ``n``, from the pre-match values."""
    d = abs(p1 - p2)
    underdog = 1 / (10 ** (d * math.sqrt(n) / 2000) + 1)
    favourite = 1 - underdog

    def win_probability(own: float, other: float) -> float:
        if own == other:
            return 0.5
        return favourite if own > other else underdog

    def experience_factor(e: int) -> float:
        return max(1.0, 5 - (e + n) / 100)

    s1, s2 = (1, 0) if first_won else (0, 1)
    d1 = 4 * experience_factor(e1) * math.sqrt(n) * (s1 - win_probability(p1, p2))
    d2 = 4 * experience_factor(e2) * math.sqrt(n) * (s2 - win_probability(p2, p1))
    return d1, d2


@dataclass
class FibsPlayer:
    rating: float = 1500.0
    experience: int = 0
    games: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)


class FibsModel:
    """What a FIBS ladder should hold, advanced match by match."""

    def __init__(self) -> None:
        self.players: dict[str, FibsPlayer] = {}

    def get(self, name: str) -> FibsPlayer:
        return self.players.setdefault(name, FibsPlayer())

    def play(self, winner: str, loser: str, length: int) -> dict[str, tuple[float, float]]:
        """Rate one match; returns ``{player: (before, after)}``."""
        w, lo = self.get(winner), self.get(loser)
        dw, dl = fibs_changes(w.rating, w.experience, lo.rating, lo.experience, length, True)
        out = {winner: (w.rating, w.rating + dw), loser: (lo.rating, lo.rating + dl)}
        for p, delta in ((w, dw), (lo, dl)):
            p.history.append((p.rating, p.rating + delta))
            p.rating += delta
            p.experience += length
            p.games += 1
        return out

    def ranking(self) -> list[str]:
        """The players, best first (ties by name, case-folded)."""
        return [n for n, _ in sorted(self.players.items(),
                                     key=lambda x: (-x[1].rating, x[0].casefold()))]

    def rank(self, name: str) -> int:
        return self.ranking().index(name) + 1


def close(a: float | None, b: float | None) -> bool:
    """Equal up to floating-point noise (the server may evaluate the formula in another order)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def check_changes(changes: Sequence[RatingChange | dict[str, Any]],
                  expected: dict[str, tuple[float, float]]) -> None:
    """A reply's or push's ``changes`` against ``{player: (before, after)}``."""
    rows = [c if isinstance(c, RatingChange) else
            RatingChange(c["player"], c["before"], c["after"], c["change"]) for c in changes]
    assert sorted(c.player for c in rows) == sorted(expected)
    for c in rows:
        before, after = expected[c.player]
        assert close(c.before, before), (c, before)
        assert close(c.after, after), (c, after)
        assert c.change is not None and close(c.change, after - before), c
        assert c.before is not None and c.after is not None and c.change == c.after - c.before, c


async def check_fibs_state(client: LobbyClient, model: FibsModel, ladder: str = "backgammon"
                           ) -> None:
    """``rating``, ``whois``, ``ladder`` and ``history`` all agree with ``model``."""
    table = await client.call("ladder", ladder=ladder, all=True)
    assert table["system"] == "fibs"
    assert [r["player"] for r in table["players"]] == model.ranking()
    rows = {r["player"]: r for r in table["players"]}
    for name, p in model.players.items():
        row = rows[name]
        assert close(row["rating"], p.rating), (name, row["rating"], p.rating)
        assert row["experience"] == p.experience
        assert row["games"] == p.games
        assert row["of"] == len(model.players)
        rating = await client.call("rating", name=name, ladder=ladder)
        (r,) = rating["ratings"]
        assert r == {"ladder": ladder, "system": "fibs", **row}
        whois = await client.call("whois", name=name)
        mine = [x for x in whois["ratings"] if x["ladder"] == ladder]
        assert mine == [r]
        hist = await client.call("history", name=name, ladder=ladder)
        got = [(e["before"], e["after"]) for e in hist["entries"]]
        assert len(got) == len(p.history)
        for (b, a), (eb, ea) in zip(got, p.history, strict=True):
            assert close(b, eb) and close(a, ea), (name, got, p.history)
        for e in hist["entries"]:
            assert e["change"] == e["after"] - e["before"]
            assert e["ladder"] == ladder


def fibs_chance(own: float, other: float, n: int) -> float:
    """The probability that the player rated ``own`` wins a match of length ``n``."""
    underdog = 1 / (10 ** (abs(own - other) * math.sqrt(n) / 2000) + 1)
    return 0.5 if own == other else (1 - underdog if own > other else underdog)
