"""How much work the long suites do: counts a run can raise through the environment.

The random walks, the races and the crash suite are sized by work (seeds, rounds of races,
kills, examples), never by time. Their defaults are what ``make test`` runs on a developer's machine
and still reach every command family and every fault at least once (each suite asserts it
did); CI raises them (``.ci/run``). README's development section lists them.
"""

from __future__ import annotations

import os


def count(name: str, default: int) -> int:
    """The whole number in ``$name`` (at least 1), else ``default``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value}")
    return value


def scale() -> float:
    """``$HARDENING_SCALE``: the share of their full example counts the fuzzing and property
    searches run (0.5 unless set; CI runs 1, a long search more)."""
    raw = os.environ.get("HARDENING_SCALE", "").strip()
    try:
        value = float(raw) if raw else 0.5
    except ValueError:
        raise ValueError(f"HARDENING_SCALE must be a number, not {raw!r}") from None
    if not value > 0:
        raise ValueError(f"HARDENING_SCALE must be more than 0, not {raw!r}")
    return value


def examples(full: int) -> int:
    """``full`` examples at :func:`scale` (at least 1)."""
    return max(1, round(full * scale()))
