"""The ČAS Scrabble ladder (RATINGS.md §3): Paluba, Dansa, Peklo and their combination.

The names below are imported when first used (PEP 562): Peklo and the combination need
numpy, which a process that rates no ČAS ladder never loads.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "CasGame": "combined",
    "CasRating": "combined",
    "CasState": "combined",
    "rate_event": "combined",
    "DansaRating": "dansa",
    "PekloHistory": "peklo",
    "solve_peklo": "peklo",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
