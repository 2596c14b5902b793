"""``matchlobby copy``: a whole lobby from one database to another (SQLite ↔ PostgreSQL).

Both ends are migrated first (so both have this version's tables), the
destination must hold no players yet, and every table is copied as it is, in
an order that keeps the references whole, in one transaction on the
destination: an interrupted copy leaves it empty. Into PostgreSQL the rows go
through ``COPY``; afterwards its identity columns continue after the copied
ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.api import Schema, Store, Table, Tx
from server.refused import Refused
from server.store.backends import is_postgres, open_store
from server.store.pg.schema import LOG_SEQUENCE

CORE_TABLES = ("players", "events", "matches", "match_players", "live_players", "corrections",
               "counters", "requests", "sessions", "account_changes", "shouts", "blocks",
               "mutes", "while_away", "bans")
SQLITE_PREFIX = "sqlite:///"
CHUNK_ROWS = 50_000  # rows held in memory at a time


def database_of(name: str) -> str:
    """``sqlite:///FILE`` as the file's path; a ``postgresql://`` URL or a path as it is."""
    return name[len(SQLITE_PREFIX):] if name.startswith(SQLITE_PREFIX) else name


def plugin_tables(schemas: Sequence[Schema]) -> list[str]:
    return [step.name for schema in schemas for steps in schema.versions.values()
            for step in steps if isinstance(step, Table)]


async def _columns(store: Store, table: str) -> list[str]:
    if store.backend == "sqlite":
        return [r[1] for r in await store.fetchall(f"PRAGMA table_info({table})")]
    return [r[0] for r in await store.fetchall(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND table_schema = current_schema() ORDER BY ordinal_position", (table,))]


async def _write(tx: Tx, store: Store, table: str, columns: list[str],
                 rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    if store.backend == "postgresql":
        await store.native().copy_records_to_table(table, records=rows, columns=columns)
        return
    marks = ", ".join("?" for _ in columns)
    await tx.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


async def log_position(tx: Tx, backend: str) -> int:
    """The last ``seq`` handed out: SQLite's ``counters`` row, PostgreSQL's sequence."""
    if backend == "postgresql":
        row = await tx.fetchone("SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 "
                                f"END FROM {LOG_SEQUENCE}")
    else:
        row = await tx.fetchone("SELECT value FROM counters WHERE name = 'seq'")
    return int(row[0]) if row is not None else 0


async def _continue_log(tx: Tx, backend: str, log_position: int) -> None:
    """The destination's next ``seq`` follows the copied log: PostgreSQL draws it from a
    sequence, SQLite from its ``counters`` row (neither end's counter is the other's)."""
    top_sql = ("SELECT {f}(coalesce((SELECT value FROM counters WHERE name = 'seq'), 0), "
               "coalesce((SELECT max(seq) FROM matches), 0), "
               "coalesce((SELECT max(seq) FROM events), 0), ?)")
    if backend == "postgresql":
        row = await tx.fetchone(top_sql.format(f="greatest"), (0,))
        top = int(row[0]) if row is not None else 0
        if top:
            await tx.execute(f"SELECT setval('{LOG_SEQUENCE}', ?)", (top,))
        await tx.execute("DELETE FROM counters WHERE name IN ('seq', 'ratings')")
        return
    await tx.execute("DELETE FROM counters WHERE name = 'ratings'")
    row = await tx.fetchone(top_sql.format(f="max"), (log_position,))
    await tx.execute("INSERT INTO counters (name, value) VALUES ('seq', ?) ON CONFLICT (name) "
                     "DO UPDATE SET value = excluded.value",
                     (int(row[0]) if row is not None else 0,))


async def copy_database(source: str, destination: str, schemas: Sequence[Schema]
                        ) -> dict[str, int]:
    """Copy every table of ``source`` into the empty ``destination``; rows copied by table."""
    src = await open_store(source, schemas)
    try:
        dst = await open_store(destination, schemas)
        try:
            return await _copy(src, dst, [*CORE_TABLES, *plugin_tables(schemas)])
        finally:
            await dst.close()
    finally:
        await src.close()


async def _copy(src: Store, dst: Store, tables: list[str]) -> dict[str, int]:
    counted: dict[str, int] = {}

    async def into(tx: Tx) -> None:
        row = await tx.fetchone("SELECT count(*) FROM players")
        if row is not None and row[0]:
            raise Refused("the destination already holds a lobby (it has players); copy "
                              "into a new, empty database")
        await tx.execute("DELETE FROM counters")  # the migration's starting row
        for table in tables:
            columns = await _columns(src, table)
            wanted = set(await _columns(dst, table))
            columns = [c for c in columns if c in wanted]
            counted[table] = 0
            chunk: list[tuple[Any, ...]] = []
            async for row in src.stream(f"SELECT {', '.join(columns)} FROM {table}"):
                chunk.append(tuple(row))
                if len(chunk) == CHUNK_ROWS:
                    await _write(tx, dst, table, columns, chunk)
                    counted[table] += len(chunk)
                    chunk = []
            await _write(tx, dst, table, columns, chunk)
            counted[table] += len(chunk)
            if dst.backend == "postgresql" and "id" in columns:
                await tx.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false) "
                    f"WHERE pg_get_serial_sequence('{table}', 'id') IS NOT NULL")

    async def read(snapshot: Tx) -> None:
        position = await log_position(snapshot, src.backend)

        async def into_with_seq(tx: Tx) -> None:
            await into(tx)
            await _continue_log(tx, dst.backend, position)

        await dst.transaction(into_with_seq)

    await src.snapshot(read)
    return counted


def describe(database: str) -> str:
    from server.store.backends import shown

    return shown(database) if is_postgres(database) else f"sqlite:///{database}"
