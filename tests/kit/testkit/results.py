"""Results files (the CSV format of ``matchlobby rate`` and ``event import``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"


def results_text(rows: Iterable[str], header: str = HEADER) -> str:
    """A results file: the header, then ``rows``."""
    return "\n".join([header, *rows]) + "\n"


def today() -> str:
    """Today's date as the server writes it (UTC): an event's default date."""
    return datetime.now(UTC).date().isoformat()
