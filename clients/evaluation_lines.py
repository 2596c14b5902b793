"""The reply to ``evaluate LADDER`` as the table ``matchlobby evaluate --ladder`` prints.

The command line's table lives in the ratings plugin, which clients may not import; this is
the same table, written apart: one row a system, its overall scores and those of the games
after every player's first 20, to four decimals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Line = Callable[[Any, Any, Any], str]
"""(data, ladders, viewer) → text, as :data:`clients.render.Renderer`."""

HEADS = ("system", "variant", "games", "log-loss", "Brier", "accuracy", "games 20+",
         "log-loss 20+", "Brier 20+", "accuracy 20+")
SCORES = ("games", "log_loss", "brier", "accuracy")


def _number(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _variant(options: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items()) or "-"


def _cells(row: Mapping[str, Any]) -> list[str]:
    return [str(row["system"]), _variant(row.get("variant") or {}),
            *(_number(row[k]) for k in SCORES), *(_number(row["after_20"][k]) for k in SCORES)]


def _table(rows: Sequence[list[str]]) -> list[str]:
    """The names left-aligned, the numbers right-aligned."""
    cells = [list(HEADS), *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADS))]
    return ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in cells]


def _games(n: int) -> str:
    return f"{n} game" if n == 1 else f"{n} games"


def evaluation(d: Mapping[str, Any], ladders: Any, viewer: Any) -> str:
    rows = d["systems"]
    scored = int(rows[0]["games"]) if rows else 0
    seasoned = int(rows[0]["after_20"]["games"]) if rows else 0
    info = ladders.get(d["ladder"])  # the ladders described so far: the system's title
    system = info.system_title if info is not None else d["system"]
    head = (f"How well {system} has predicted {d['ladder']}: {_games(scored)} scored, "
            f"{seasoned} of them after every player's first 20 (20+).")
    foot = "Lower log-loss and Brier are better; the baseline row always said 0.5."
    return "\n".join([head, *_table([_cells(r) for r in rows]), foot])


REPLIES: dict[str, Line] = {"evaluate": evaluation}
