"""The domain events the lobby publishes to plugins, inside the transaction that records them."""

from __future__ import annotations

from dataclasses import dataclass, field

from server.api.records import RatedUnit


@dataclass(frozen=True)
class MatchFinished:
    """A rated result: a live match, or an event's result on a ladder that rates each result."""

    unit: RatedUnit


@dataclass(frozen=True)
class EventClosed:
    """An event closed; ``unit`` holds its rated games (none when nothing in it is rated)."""

    unit: RatedUnit


@dataclass(frozen=True)
class LadderCorrected:
    """The log of ``ladder`` changed in the past (void, adjudicate): what was derived from it
    must be recomputed. ``seq`` is the corrected unit's place in the log (``None`` when it was
    never rated); everything from it on may have changed."""

    ladder: str
    cause: dict[str, int] = field(default_factory=dict)
    seq: int | None = None


DomainEvent = MatchFinished | EventClosed | LadderCorrected
