"""The lobby's clock: now as the log stores it and today's date, both in UTC.

Worked out once a second, as every request and every stake asks for them.
"""

from __future__ import annotations

import time
from datetime import date

_stamp: tuple[int, str, date] = (-1, "", date.min)


def moment() -> tuple[str, date]:
    """Now as a timestamp (``2026-11-30T10:15:02Z``, to the second) and today's UTC date."""
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        at = time.gmtime(second)
        _stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", at),
                  date(at.tm_year, at.tm_mon, at.tm_mday))
    return _stamp[1], _stamp[2]


def now() -> str:
    """UTC timestamps as the log stores them: ``2026-11-30T10:15:02Z``."""
    return moment()[0]


def today() -> date:
    """Today's UTC date, the lobby's calendar."""
    return moment()[1]
