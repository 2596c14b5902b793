"""Values written into a statement (server/store/pg/sql.py's ``inliner``): what PostgreSQL stores
from the inlined text is what it stores from the same values sent as a prepared statement's
parameters, for each column type the lobby's tables use; a value of another Python type than
the parameter's is not written in (the prepared statement stores or refuses it, as ever)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.store.pg.sql import inliner, literal, pg_sql

pytestmark = pytest.mark.postgresql

INSERT = "INSERT INTO v (k, t, d, i, b) VALUES (?, ?, ?, ?, ?)"


@pytest.fixture
async def conn(pg_url: str) -> AsyncIterator[Any]:
    import asyncpg

    c = await asyncpg.connect(pg_url, server_settings={"standard_conforming_strings": "on"})
    await c.execute("CREATE TABLE v (k TEXT PRIMARY KEY, t TEXT, d DOUBLE PRECISION, "
                    "i BIGINT, b BYTEA)")
    try:
        yield c
    finally:
        await c.close()


async def kinds(conn: Any, sql: str) -> tuple[str, ...]:
    statement = await conn.prepare(pg_sql(sql))
    return tuple(t.name for t in statement.get_parameters())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                      math.copysign(1, b))
    return bool(a == b)


texts = st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
rows = st.tuples(st.none() | texts,
                 st.none() | st.floats(allow_nan=True, allow_infinity=True),
                 st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1),
                 st.none() | st.binary())


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=rows)
async def test_an_inlined_row_stores_what_its_parameters_store(conn: Any,
                                                              row: tuple[Any, ...]) -> None:
    await conn.execute("DELETE FROM v")
    text = inliner(INSERT, await kinds(conn, INSERT))(("inlined", *row))
    assert text is not None
    await conn.execute(text)  # a simple query: no parameters
    await conn.execute(pg_sql(INSERT), "prepared", *row)
    stored = {r["k"]: tuple(r)[1:] for r in await conn.fetch("SELECT * FROM v")}
    assert all(_same(a, b) for a, b in zip(stored["inlined"], stored["prepared"], strict=True))


async def test_quotes_and_marks_inside_values_and_statements_stay_text(conn: Any) -> None:
    sql = "INSERT INTO v (k, t) VALUES (?2, ?1 || '?')"
    value = "it's \\' ?1 $1 ); DROP TABLE v; --"
    text = inliner(sql, await kinds(conn, sql))((value, "k"))
    assert text is not None
    await conn.execute(text)
    assert await conn.fetchval("SELECT t FROM v WHERE k = 'k'") == value + "?"


def test_what_cannot_be_written_in_is_left_to_a_parameter() -> None:
    assert literal("a\x00b", "text") is None  # PostgreSQL's text holds no NUL
    assert literal("\udc80", "text") is None  # not encodable: the driver raises, in the job
    assert literal(object(), "text") is None
    sql = "INSERT INTO v (k) VALUES (?)"
    assert inliner(sql, ())(()) is None  # too few values
    assert inliner(sql, ("text", "text"))((1, 2)) is None  # too many
    assert inliner("INSERT INTO v (k) VALUES (?0)", ("text",))(("a",)) is None
    assert inliner("DELETE FROM v", ())(()) == "DELETE FROM v"


@pytest.mark.parametrize(("value", "kind"), [
    (1.5, "int8"), (2.0, "int8"), ("7", "int8"), ("1.5", "float8"), (5, "text"),
    (1.5, "text"), (True, "text"), (b"AB", "text"), ("\\x41", "bytea"), (1, "bool"),
    (1.5, "numeric"), (bytearray(b"A"), "bytea")])
def test_a_value_of_another_type_than_its_parameters_is_not_written_in(
        value: Any, kind: str) -> None:
    assert literal(value, kind) is None


async def test_a_value_not_written_in_is_stored_or_refused_as_a_parameter_is(
        conn: Any, pg_url: str) -> None:
    """Through the writer's queue: a float for an integer column is what asyncpg makes of it,
    a number for a text column is refused, as before values were written in."""
    from server.api import Tx
    from server.store.pg.database import PgDatabase

    db = PgDatabase(pg_url)
    await db.open()
    try:
        async def floats(tx: Tx) -> None:
            await tx.execute("INSERT INTO v (k, i) VALUES (?, ?)", ("f", 2.0))

        async def numbers(tx: Tx) -> None:
            await tx.execute("INSERT INTO v (k, t) VALUES (?, ?)", ("n", 5))

        await db.write(floats)
        with pytest.raises(Exception, match="expected str"):
            await db.write(numbers)
    finally:
        await db.close()
    assert await conn.fetch("SELECT k, i, t FROM v") == [("f", 2, None)]
