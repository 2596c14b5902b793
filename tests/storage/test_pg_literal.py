"""Values written into a statement (server/store/pg/sql.py's ``inline``): what PostgreSQL stores
from the inlined text is what it stores from the same values sent as a prepared statement's
parameters, for each column type the lobby's tables use."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import postgres

from server.store.pg.sql import inline, literal, pg_sql

pytestmark = pytest.mark.postgresql

INSERT = "INSERT INTO v (k, t, d, i, b) VALUES (?, ?, ?, ?, ?)"


@pytest.fixture
async def conn() -> AsyncIterator[Any]:
    server = postgres.server_url()
    if server is None:
        pytest.skip(postgres.MISSING)
    import asyncpg

    url = postgres.new_database(server)
    c = await asyncpg.connect(url, server_settings={"standard_conforming_strings": "on"})
    await c.execute("CREATE TABLE v (k TEXT PRIMARY KEY, t TEXT, d DOUBLE PRECISION, "
                    "i BIGINT, b BYTEA)")
    try:
        yield c
    finally:
        await c.close()
        postgres.drop_database(server, url.partition("?")[0].rsplit("/", 1)[1])


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
    text = inline(INSERT, ("inlined", *row))
    assert text is not None
    await conn.execute(text)  # a simple query: no parameters
    await conn.execute(pg_sql(INSERT), "prepared", *row)
    stored = {r["k"]: tuple(r)[1:] for r in await conn.fetch("SELECT * FROM v")}
    assert all(_same(a, b) for a, b in zip(stored["inlined"], stored["prepared"], strict=True))


async def test_quotes_and_marks_inside_values_and_statements_stay_text(conn: Any) -> None:
    sql = "INSERT INTO v (k, t) VALUES (?2, ?1 || '?')"
    value = "it's \\' ?1 $1 ); DROP TABLE v; --"
    text = inline(sql, (value, "k"))
    assert text is not None
    await conn.execute(text)
    assert await conn.fetchval("SELECT t FROM v WHERE k = 'k'") == value + "?"


def test_what_cannot_be_written_in_is_left_to_a_parameter() -> None:
    assert literal("a\x00b") is None  # PostgreSQL's text holds no NUL
    assert literal("\udc80") is None  # not encodable: the driver raises, in the job
    assert literal(object()) is None
    assert inline("INSERT INTO v (k) VALUES (?)", ()) is None  # too few values
    assert inline("INSERT INTO v (k) VALUES (?)", (1, 2)) is None  # too many
    assert inline("DELETE FROM v", ()) == "DELETE FROM v"
