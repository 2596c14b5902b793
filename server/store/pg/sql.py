"""The lobby's and the plugins' SQL as PostgreSQL reads it.

Statements are written once, with SQLite's ``?`` and ``?N`` placeholders and
SQL both databases understand; here the placeholders become ``$N``. Quoted
strings and identifiers are left alone.
"""

from __future__ import annotations

import re

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
