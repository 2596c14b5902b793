"""The figures tests measure (times, sizes, counts), reported after the results.

A test module registers its group of figures once (:func:`group`) and fills it; the shared
fixtures' summary hook prints every group that has something in it, each under its own
heading; they are kept as ``figures.json`` in pytest's base temporary directory too. In a
run spread over workers, each worker's figures are merged into the controller's
(:func:`merge`, :mod:`testkit.session`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, TypeVar

M = TypeVar("M", bound=MutableMapping[str, Any])

GROUPS: dict[str, MutableMapping[str, Any]] = {}


def group(title: str, figures: M | None = None) -> M:
    """The group of figures named ``title`` (``figures``, or a new dict, the first time)."""
    if title not in GROUPS:
        GROUPS[title] = figures if figures is not None else {}
    return GROUPS[title]  # type: ignore[return-value]


def filled() -> dict[str, dict[str, Any]]:
    return {title: dict(figs) for title, figs in GROUPS.items() if figs}


def export() -> dict[str, dict[str, Any]]:
    """The groups that hold figures as plain JSON values (what a worker sends its controller),
    each marked with whether it counts (a :class:`~collections.Counter`, summed on merging)."""
    return {title: {"counts": isinstance(GROUPS[title], Counter),
                    "figures": json.loads(json.dumps(figs, default=str))}
            for title, figs in filled().items()}


def merge(exported: dict[str, dict[str, Any]]) -> None:
    """Another process's figures (:func:`export`) added to these: a counting group's counts
    summed, any other group's figures (each a test's own) taken as they are."""
    for title, sent in exported.items():
        mine: dict[str, Any] = group(title, Counter() if sent["counts"] else None)
        mine.update(sent["figures"])  # a Counter's update adds


def report(write_section: Any, write_line: Any) -> None:
    """Print the groups that hold figures, each under its own heading."""
    for title, figs in filled().items():
        write_section(title)
        for key, value in figs.items():
            shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            write_line(f"{key}: {shown}")


def save(path: Path) -> None:
    """Every group that holds figures, as JSON."""
    if filled():
        path.write_text(json.dumps(filled(), indent=2, sort_keys=True, default=str),
                        encoding="utf-8")
