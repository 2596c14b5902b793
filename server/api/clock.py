"""The lobby's clock: timestamps as the log stores them and today's date, both in UTC.

Formatted once a second (and once for each offset from now a caller uses), as every
request, stored reply, invitation and stake asks for them.
"""

from __future__ import annotations

import time
from datetime import date
from functools import lru_cache


@lru_cache(maxsize=16)
def _at(second: int) -> tuple[str, date]:
    at = time.gmtime(second)
    return (time.strftime("%Y-%m-%dT%H:%M:%SZ", at),
            date(at.tm_year, at.tm_mon, at.tm_mday))


def moment(offset: float = 0) -> tuple[str, date]:
    """``offset`` seconds from now as a timestamp (``2026-11-30T10:15:02Z``, to the second)
    and as a UTC date."""
    return _at(int(time.time() + offset))


def now() -> str:
    """UTC timestamps as the log stores them: ``2026-11-30T10:15:02Z``."""
    return moment()[0]


def today() -> date:
    """Today's UTC date, the lobby's calendar."""
    return moment()[1]
