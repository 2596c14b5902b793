"""Any reply as text, whatever its shape: what the terminal shows of a command it has no words
for (a plugin's), and of a reply its own words could not read.

Nothing is dropped: a dict's plain values go on one line (``key: value, …``), a nested dict
on indented lines under its key, a list of plain values on one line, a list of dicts with the
same keys as a small table (a dict of plain values inside a row spread over columns named
``key sub``), any other list as indented items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

INDENT = "  "


def plain(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _nested(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def shaped(data: Any) -> str:
    """``data`` (decoded JSON) as lines of text."""
    return "\n".join(_lines(data))


def _lines(data: Any) -> list[str]:
    if isinstance(data, Mapping):
        return _mapping(data)
    if isinstance(data, list | tuple):
        return _sequence(data)
    return [plain(data)]


def _mapping(data: Mapping[str, Any]) -> list[str]:
    flat = [f"{k}: {plain(v)}" for k, v in data.items() if not _nested(v)]
    lines = [", ".join(flat)] if flat else []
    for key, value in data.items():
        if not _nested(value):
            continue
        if not value:
            lines.append(f"{key}: none")
        elif isinstance(value, list | tuple) and not any(_nested(v) for v in value):
            lines.append(f"{key}: {', '.join(plain(v) for v in value)}")
        else:
            lines.append(f"{key}:")
            lines += [INDENT + line for line in _lines(value)]
    return lines


def _sequence(items: Sequence[Any]) -> list[str]:
    if not items:
        return ["(none)"]
    if not any(_nested(v) for v in items):
        return [", ".join(plain(v) for v in items)]
    grid = _table(items)
    if grid is not None:
        return grid
    lines = []
    for item in items:
        first, *rest = _lines(item)
        lines += ["- " + first, *(INDENT + line for line in rest)]
    return lines


def _row(item: Any) -> dict[str, Any] | None:
    """A list's item as table cells: its plain values, and those of a dict inside it spread over
    columns ``key sub``; ``None`` when it holds anything deeper."""
    if not isinstance(item, Mapping):
        return None
    cells: dict[str, Any] = {}
    for key, value in item.items():
        if isinstance(value, Mapping) and value and not any(_nested(v) for v in value.values()):
            cells.update({f"{key} {sub}": v for sub, v in value.items()})
        elif isinstance(value, list | tuple) and not any(_nested(v) for v in value):
            cells[key] = ", ".join(plain(v) for v in value)
        elif _nested(value):
            return None
        else:
            cells[key] = value
    return cells


def _table(items: Sequence[Any]) -> list[str] | None:
    """Dicts of the same keys (once spread) as an aligned table, numbers to the right."""
    rows = [_row(item) for item in items]
    if any(r is None for r in rows):
        return None
    cells = [r for r in rows if r is not None]
    headers = list(cells[0])
    if any(list(r) != headers for r in cells):
        return None
    texts = [headers, *([plain(r[h]) for h in headers] for r in cells)]
    widths = [max(len(t[i]) for t in texts) for i in range(len(headers))]
    numeric = [all(isinstance(r[h], int | float) and not isinstance(r[h], bool) for r in cells)
               for h in headers]
    return ["  ".join(t.rjust(w) if n else t.ljust(w)
                      for t, w, n in zip(text, widths, numeric, strict=True)).rstrip()
            for text in texts]
