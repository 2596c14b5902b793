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
