"""What a read costs the budget of the address that asked for it (server.limits.ReadBudget).

A unit is about what the cheapest reads cost the server (``whois``, ``help``: a fraction of
a millisecond); a read costs one, and one more for every :data:`ROWS_PER_UNIT` rows its
reply holds or :data:`READ_PER_UNIT` rows it read without returning them (an event's
standings worked out over all its games, a history sorted to find a page). The figures are
from ``bench/costly_reads.py`` on the development machine.
"""

from __future__ import annotations

import math
from typing import Any

ROWS_PER_UNIT = 100
READ_PER_UNIT = 100


def rows_in(data: Any) -> int:
    """The rows of a reply: every list at its top level (a page of a ladder, of a history, of
    an event's games and standings)."""
    if not isinstance(data, dict):
        return 0
    return sum(len(v) for v in data.values() if isinstance(v, list))


def read_cost(message: dict[str, Any], read: int) -> float:
    """The units a read cost: ``message`` is its reply, ``read`` the rows it read besides."""
    rows = rows_in(message.get("data")) if message.get("ok") else 0
    return 1.0 + rows / ROWS_PER_UNIT + read / READ_PER_UNIT


def retry_after(wait: float) -> float:
    """Seconds to wait before asking again, as the refusal says them (rounded up)."""
    return max(0.1, math.ceil(wait * 10) / 10)


def refusal(wait: float) -> str:
    return (f"Your address has asked for more reading than the server gives one address; "
            f"try again in {retry_after(wait):.1f} s.")
