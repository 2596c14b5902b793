"""Timestamps as the log stores them, worked out once a second."""

from __future__ import annotations

import time
from datetime import date

_stamp: tuple[int, str, date] = (-1, "", date.min)


def _clock() -> tuple[int, str, date]:
    """The second now, as a timestamp and as a date: worked out once a second."""
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        at = time.gmtime(second)
        _stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", at),
                  date(at.tm_year, at.tm_mon, at.tm_mday))
    return _stamp


def now() -> str:
    """UTC timestamps as DESIGN.md shows them: ``2026-11-30T10:15:02Z``."""
    return _clock()[1]


def today() -> date:
    """Today's UTC date."""
    return _clock()[2]
