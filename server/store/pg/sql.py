"""The lobby's and the plugins' SQL as PostgreSQL reads it.

Statements are written once, with SQLite's ``?`` and ``?N`` placeholders and
SQL both databases understand; here the placeholders become ``$N``. Quoted
strings and identifiers are left alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|\?(\d*)""")
_cache: dict[str, str] = {}


def pg_sql(sql: str) -> str:
    """``sql`` with ``?`` numbered in order and ``?N`` as ``$N``."""
    done = _cache.get(sql)
    if done is not None:
        return done
    count = 0

    def mark(m: re.Match[str]) -> str:
        nonlocal count
        text = m.group(0)
        if not text.startswith("?"):
            return text
        if m.group(1):
            return "$" + m.group(1)
        count += 1
        return f"${count}"

    done = _TOKEN.sub(mark, sql)
    if len(_cache) < 4096:
        _cache[sql] = done
    return done


# ``INSERT INTO table (columns) VALUES (?, …)``: one row of marks, nothing else (no conflict
# clause, no RETURNING): the rows can be COPYed in.
_PLAIN_INSERT = re.compile(
    r"^\s*INSERT\s+INTO\s+(\w+)\s*\(([\w\s,]+)\)\s*VALUES\s*\((?:\s*\?\s*,)*\s*\?\s*\)\s*$",
    re.IGNORECASE)
_copy_cache: dict[str, tuple[str, list[str]] | None] = {}


def copy_target(sql: str) -> tuple[str, list[str]] | None:
    """(table, columns) when ``sql`` is a plain one-row ``INSERT`` of ``?`` marks, one a
    column; else ``None``."""
    if sql in _copy_cache:
        return _copy_cache[sql]
    found = _PLAIN_INSERT.match(sql)
    target = None
    if found is not None:
        columns = [c.strip() for c in found.group(2).split(",")]
        marks = sql[found.end(2):].count("?")
        if marks == len(columns):
            target = (found.group(1), columns)
    if len(_copy_cache) < 4096:
        _copy_cache[sql] = target
    return target


# ---- values written into the statement --------------------------------------------------------
# A job's writes whose outcome it does not read go to PostgreSQL later, several statements in
# one simple query (a round trip for all of them), so their values are written in as literals.

def literal(value: Any) -> str | None:
    """``value`` as a quoted literal of no type, which PostgreSQL reads as the type the statement
    gives its place (as it types a parameter); ``None`` for a value this cannot write safely
    (the statement then goes as a prepared one, which raises what it must)."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        if "\x00" in value or not (value.isascii() or _encodable(value)):
            return None
        return "'" + str.replace(value, "'", "''") + "'"
    if isinstance(value, bool):
        return "'1'" if value else "'0'"  # stored as SQLite stores it: an integer
    if isinstance(value, int):
        return "'" + int.__repr__(value) + "'"
    if isinstance(value, float):
        if math.isfinite(value):
            return "'" + float.__repr__(float(value)) + "'"  # the shortest text of the same double
        return "'NaN'" if math.isnan(value) else ("'Infinity'" if value > 0 else "'-Infinity'")
    if isinstance(value, bytes):
        return "'\\x" + value.hex() + "'"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_parts_cache: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}


def _parts(sql: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The text around each placeholder of ``sql`` and the index of the value each one takes."""
    found = _parts_cache.get(sql)
    if found is not None:
        return found
    texts: list[str] = []
    places: list[int] = []
    start = count = 0
    for m in _TOKEN.finditer(sql):
        if not m.group(0).startswith("?"):
            continue
        texts.append(sql[start:m.start()])
        if m.group(1):
            places.append(int(m.group(1)) - 1)
        else:
            places.append(count)
            count += 1
        start = m.end()
    texts.append(sql[start:])
    found = (tuple(texts), tuple(places))
    if len(_parts_cache) < 4096:
        _parts_cache[sql] = found
    return found


def inline(sql: str, params: Sequence[Any]) -> str | None:
    """``sql`` with its values written in, or ``None`` when one of them cannot be (or the
    placeholders do not match the values)."""
    texts, places = _parts(sql)
    values = [literal(v) for v in params]
    if None in values or len(values) != (max(places) + 1 if places else 0):
        return None
    out = [texts[0]]
    for place, text in zip(places, texts[1:], strict=True):
        out.append(values[place])  # type: ignore[arg-type]
        out.append(text)
    return "".join(out)
