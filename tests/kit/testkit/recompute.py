"""Every ladder a server shows against ``matchlobby rate`` run on the results of its log."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from clients import LobbyClient
from testkit.cli import run_cli_async
from testkit.db import log_rows
from testkit.results import results_text

SYSTEMS = {"backgammon": "fibs", "scrabble": "cas", "foosball-singles": "p4p",
           "foosball-doubles": "p4p"}
"""The default ladders and their systems."""


def same_value(a: Any, b: Any) -> bool:
    """Equal, floats up to rounding noise."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and \
            math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
    return bool(a == b)


async def ladders_against_recomputation(client: LobbyClient, db: Path, work: Path) -> dict[str, int]:
    """Every ladder the server shows equals ``matchlobby rate`` run on the log's results.

    Returns the number of players compared per ladder; raises ``AssertionError``
    naming the first difference.
    """
    compared: dict[str, int] = {}
    for ladder, system in SYSTEMS.items():
        shown = await client.call("ladder", ladder=ladder, all=True, count=1000)
        assert shown["total"] == len(shown["players"]), (ladder, shown["total"])
        rows = log_rows(db, ladder)
        if not rows:
            assert shown["players"] == [], (ladder, shown)
            compared[ladder] = 0
            continue
        path = work / f"recompute-{ladder}.csv"
        path.write_text(results_text(rows), encoding="utf-8")
        done = await run_cli_async(["rate", system, str(path), "--format", "json"], work)
        assert done.returncode == 0, (ladder, done.stderr)
        expected = json.loads(done.stdout)["players"]
        got = shown["players"]
        assert [r["player"] for r in got] == [r["player"] for r in expected], \
            (ladder, [r["player"] for r in got], [r["player"] for r in expected])
        for mine, theirs in zip(got, expected, strict=True):
            for key, value in theirs.items():
                assert same_value(mine.get(key), value), (ladder, mine["player"], key,
                                                          mine.get(key), value)
        compared[ladder] = len(got)
    return compared
