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

_TEXT = frozenset({"text", "varchar", "bpchar", "name"})
_INTEGER = frozenset({"int8", "int4", "int2"})


def literal(value: Any, kind: str) -> str | None:
    """``value`` written in where the statement has a parameter of type ``kind`` (PostgreSQL's
    name of it, as a prepared statement reports it): a quoted literal PostgreSQL reads as that
    type. ``None`` for a pair this does not write (a value of another Python type, a type not
    listed here, a text PostgreSQL cannot hold): the statement then goes as a prepared one,
    which stores, or refuses, exactly what it always did."""
    if value is None:
        return "NULL"
    if kind in _TEXT:
        if type(value) is not str or "\x00" in value or not (value.isascii()
                                                             or _encodable(value)):
            return None
        return "'" + value.replace("'", "''") + "'"
    if kind in _INTEGER:
        if type(value) is bool:
            return "'1'" if value else "'0'"
        return "'" + int.__repr__(value) + "'" if type(value) is int else None
    if kind == "float8":
        if type(value) is int:
            value = float(value)
        elif not isinstance(value, float):  # numpy's float64 is one
            return None
        value = float(value)
        if math.isfinite(value):
            return "'" + repr(value) + "'"  # the shortest text of the same double
        return "'NaN'" if math.isnan(value) else ("'Infinity'" if value > 0 else "'-Infinity'")
    if kind == "bytea":
        return "'\\x" + value.hex() + "'" if type(value) is bytes else None
    if kind == "bool":
        return ("'true'" if value else "'false'") if type(value) is bool else None
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_parts_cache: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}


def _parts(sql: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The text around each placeholder of ``sql`` and the index of the value each one takes
    (``$N`` counts from 1: a ``?0`` gets -1, which :func:`inline` refuses)."""
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


def inline(sql: str, params: Sequence[Any], kinds: Sequence[str]) -> str | None:
    """``sql`` with its values written in, ``kinds`` the types of its parameters (as
    :meth:`asyncpg.prepared_stmt.PreparedStatement.get_parameters` names them); ``None`` when
    one of them is not written in (:func:`literal`) or the values do not fit the
    placeholders (the prepared statement then says what is wrong)."""
    texts, places = _parts(sql)
    if len(params) != len(kinds) or (places and min(places) < 0):
        return None
    values = [literal(v, k) for v, k in zip(params, kinds, strict=True)]
    if None in values or len(values) != (max(places) + 1 if places else 0):
        return None
    out = [texts[0]]
    for place, text in zip(places, texts[1:], strict=True):
        out.append(values[place])  # type: ignore[arg-type]
        out.append(text)
    return "".join(out)
