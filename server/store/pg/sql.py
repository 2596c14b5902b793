"""The lobby's and the plugins' SQL as PostgreSQL reads it.

Statements are written once, with SQLite's ``?`` and ``?N`` placeholders and
SQL both databases understand; here the placeholders become ``$N``. Quoted
strings and identifiers are left alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|\?(\d*)""")
_cache: dict[str, str] = {}


def pg_sql(sql: str) -> str:
    """``sql`` with ``?`` numbered in order and ``?N`` as ``$N``."""
    done = _cache.get(sql)
    if done is not None:
        return done
    texts, places = _parts(sql)
    done = texts[0] + "".join(f"${place + 1}{text}"
                              for place, text in zip(places, texts[1:], strict=True))
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

def _text(value: Any) -> str | None:
    if type(value) is not str or "\x00" in value or not (value.isascii() or _encodable(value)):
        return None
    return "'" + value.replace("'", "''") + "'"


def _integer(value: Any) -> str | None:
    if type(value) is bool:
        return "'1'" if value else "'0'"
    return "'" + int.__repr__(value) + "'" if type(value) is int else None


def _float(value: Any) -> str | None:
    if type(value) is int:
        value = float(value)
    elif not isinstance(value, float):  # numpy's float64 is one
        return None
    value = float(value)
    if math.isfinite(value):
        return "'" + repr(value) + "'"  # the shortest text of the same double
    return "'NaN'" if math.isnan(value) else ("'Infinity'" if value > 0 else "'-Infinity'")


def _bytes(value: Any) -> str | None:
    return "'\\x" + value.hex() + "'" if type(value) is bytes else None


def _bool(value: Any) -> str | None:
    return ("'true'" if value else "'false'") if type(value) is bool else None


def _never(value: Any) -> None:
    return None


_WRITERS: dict[str, Callable[[Any], str | None]] = {
    "text": _text, "varchar": _text, "bpchar": _text, "name": _text,
    "int8": _integer, "int4": _integer, "int2": _integer,
    "float8": _float, "bytea": _bytes, "bool": _bool}


def literal(value: Any, kind: str) -> str | None:
    """``value`` written in where the statement has a parameter of type ``kind`` (PostgreSQL's
    name of it, as a prepared statement reports it): a quoted literal PostgreSQL reads as that
    type. ``None`` for a pair this does not write (a value of another Python type, a type not
    listed here, a text PostgreSQL cannot hold): the statement then goes as a prepared one,
    which stores, or refuses, exactly what it always did."""
    return "NULL" if value is None else _WRITERS.get(kind, _never)(value)


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_parts_cache: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}


def _parts(sql: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The text around each placeholder of ``sql`` and the index of the value each one takes:
    ``?`` in order, ``?N`` the N-th (a ``?0`` gets -1, which :func:`inliner` refuses)."""
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


Inliner = Callable[[Sequence[Any]], "str | None"]


def inliner(sql: str, kinds: Sequence[str]) -> Inliner:
    """What writes values into ``sql``, ``kinds`` the types of its parameters (as
    :meth:`asyncpg.prepared_stmt.PreparedStatement.get_parameters` names them): the text, or
    ``None`` when a value is not written in (:func:`literal`) or the values do not fit the
    placeholders (the prepared statement then says what is wrong)."""
    texts, places = _parts(sql)
    count = len(kinds)
    if (places and (min(places) < 0 or max(places) + 1 != count)) or (not places and count):
        return _never
    writers = [_WRITERS.get(kind, _never) for kind in kinds]
    head, rest = texts[0], tuple(zip(places, texts[1:], strict=True))

    def render(params: Sequence[Any]) -> str | None:
        if len(params) != count:
            return None
        values: list[str] = []
        for write, value in zip(writers, params, strict=True):
            if value is None:
                values.append("NULL")
            elif (text := write(value)) is not None:
                values.append(text)
            else:
                return None
        out = [head]
        for place, text in rest:
            out.append(values[place])
            out.append(text)
        return "".join(out)

    return render
