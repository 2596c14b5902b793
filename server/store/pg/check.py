"""What ``matchlobby check`` can tell about a PostgreSQL database besides its ratings.

PostgreSQL keeps its own pages whole (checksums, WAL), so the questions are the lobby's:
the schema version is one this code knows; the tables, columns and indexes that version
must have are there (the same list SQLite's check compares, :mod:`server.store.dbcheck`);
no constraint was left unchecked (``NOT VALID``) and no index half built; and every
foreign key holds (a bulk load with triggers off, or a table restored alone, can break one).
Where the ``amcheck`` extension is installed each B-tree index is also checked against its
table (``bt_index_check``).
"""

from __future__ import annotations

from typing import Any

from server.store.dbcheck import Schema, _missing, expected_schema
from server.store.schema import SCHEMA_VERSION

__all__ = ["amcheck_installed", "problems"]

FOREIGN_KEYS = """
SELECT c.conname, c.conrelid::regclass::text, c.confrelid::regclass::text,
    array(SELECT attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i),
    array(SELECT attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
          JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i)
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
WHERE c.contype = 'f' AND n.nspname = current_schema() ORDER BY 1
"""


async def _found(conn: Any) -> Schema:
    columns: dict[str, set[str]] = {}
    for r in await conn.fetch("SELECT table_name, column_name FROM information_schema.columns "
                              "WHERE table_schema = current_schema()"):
        columns.setdefault(r[0], set()).add(r[1])
    indexes: dict[str, set[str]] = {}
    for r in await conn.fetch("SELECT tablename, indexname FROM pg_indexes "
                              "WHERE schemaname = current_schema()"):
        indexes.setdefault(r[0], set()).add(r[1])
    return {t: (frozenset(c), frozenset(indexes.get(t, ()))) for t, c in columns.items()}


def _without_sqlite_own(schema: Schema) -> Schema:
    """SQLite's automatic indexes (of its UNIQUE and PRIMARY KEY constraints) have no name on
    PostgreSQL."""
    return {t: (c, frozenset(i for i in ix if not i.startswith("sqlite_")))
            for t, (c, ix) in schema.items()}


async def _orphans(conn: Any) -> list[str]:
    out = []
    for name, child, parent, cols, pcols in await conn.fetch(FOREIGN_KEYS):
        joined = " AND ".join(f'p."{p}" = c."{k}"' for k, p in zip(cols, pcols, strict=True))
        present = " AND ".join(f'c."{k}" IS NOT NULL' for k in cols)
        count = await conn.fetchval(
            f"SELECT count(*) FROM {child} c WHERE {present} AND NOT EXISTS "
            f"(SELECT 1 FROM {parent} p WHERE {joined})")
        if count:
            out.append(f"{count} row(s) of table {child!r} refer to missing rows of {parent!r} "
                       f"({', '.join(cols)}; constraint {name})")
    return out


async def amcheck_installed(conn: Any) -> bool:
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension "
                                    "WHERE extname = 'amcheck')"))


async def _indexes(conn: Any) -> list[str]:
    if not await amcheck_installed(conn):
        return []
    out = []
    rows = await conn.fetch(
        "SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE a.amname = 'btree' AND i.indisvalid AND n.nspname = current_schema() ORDER BY 1")
    for (index,) in rows:
        try:
            await conn.execute("SELECT bt_index_check($1::regclass, true)", index)
        except Exception as e:  # amcheck's finding, as PostgreSQL words it
            out.append(f"index {index} is damaged (amcheck: {' '.join(str(e).split())})")
    return out


async def problems(conn: Any) -> tuple[int | None, list[str]]:
    """The schema version (``None``: not a matchlobby database) and what is wrong, each a
    sentence."""
    if not await conn.fetchval("SELECT to_regclass('schema_version') IS NOT NULL"):
        return None, ["not a matchlobby database (it has no schema_version table)"]
    version = await conn.fetchval("SELECT max(version) FROM schema_version")
    if version is None:
        return None, ["the schema_version table is empty"]
    version = int(version)
    if version > SCHEMA_VERSION:
        return version, [f"its schema version {version} is newer than this matchlobby's "
                         f"({SCHEMA_VERSION}); check it with the version that wrote it"]
    found: list[str] = []
    lacking = _missing(_without_sqlite_own(await expected_schema(version)), await _found(conn))
    if lacking is not None:
        found.append(f"not a whole matchlobby database (schema {version}): {lacking}")
    for name, table in await conn.fetch(
            "SELECT conname, conrelid::regclass::text FROM pg_constraint c JOIN pg_namespace n "
            "ON n.oid = c.connamespace WHERE NOT convalidated AND n.nspname = current_schema()"):
        found.append(f"constraint {name} of table {table!r} was never checked (NOT VALID)")
    for (index,) in await conn.fetch(
            "SELECT indexrelid::regclass::text FROM pg_index i JOIN pg_class c "
            "ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE NOT i.indisvalid AND n.nspname = current_schema()"):
        found.append(f"index {index} is not valid (a build that failed); drop it and migrate")
    found += await _orphans(conn)
    found += await _indexes(conn)
    return version, found
