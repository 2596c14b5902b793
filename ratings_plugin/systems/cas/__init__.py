"""The ČAS Scrabble ladder (RATINGS.md §3): Paluba, Dansa, Peklo and their combination."""

from ratings_plugin.systems.cas.combined import CasGame, CasRating, CasState, rate_event
from ratings_plugin.systems.cas.dansa import DansaRating
from ratings_plugin.systems.cas.peklo import PekloHistory, solve_peklo

__all__ = [
    "CasGame",
    "CasRating",
    "CasState",
    "DansaRating",
    "PekloHistory",
    "rate_event",
    "solve_peklo",
]
