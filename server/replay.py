"""``matchlobby replay``: recompute every ladder from the match log, check or rewrite."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import aiosqlite

from ratings_plugin.plugin import INSERT_HISTORY, UPSERT, rating_row, replay_ladder
from server.config import Config
from server.log import ladder_units
from server.storage import connect, migrate

RATING_COLUMNS = ("rating", "games", "experience", "paluba", "dansa", "peklo", "last_played")


async def _expected(conn: aiosqlite.Connection, config: Config
                    ) -> dict[str, tuple[list[Any], list[Any]]]:
    async with conn.execute("SELECT id, name FROM players") as cur:
        ids = {row["name"]: row["id"] async for row in cur}
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    for ladder in config.ladders:
        units = await ladder_units(conn, ladder.name)
        book, history = replay_ladder(ladder.name, ladder.options, units, ids)
        ratings = sorted(rating_row(ladder.name, s, ids) for s in book.standings.values())
        out[ladder.name] = (ratings, history)
    return out


async def check(conn: aiosqlite.Connection, config: Config, out: TextIO) -> int:
    """Compare stored ratings and history with the replayed ones; the number of differences."""
    await conn.execute("BEGIN")  # one snapshot for the whole comparison
    try:
        expected = await _expected(conn, config)
        names = {r["id"]: r["name"] for r in await (await conn.execute(
            "SELECT id, name FROM players")).fetchall()}
        problems = 0
        for ladder, (ratings, history) in expected.items():
            stored = {
                r["player_id"]: tuple(r[c] for c in RATING_COLUMNS)
                for r in await (await conn.execute(
                    "SELECT * FROM ratings WHERE ladder = ?", (ladder,))).fetchall()
            }
            replayed = {row[1]: tuple(row[2:]) for row in ratings}
            for pid in sorted(set(stored) | set(replayed)):
                a, b = stored.get(pid), replayed.get(pid)
                if a != b:
                    problems += 1
                    print(f"{ladder}: {names.get(pid, pid)}: stored {_show(a)}, "
                          f"replayed {_show(b)}", file=out)
            stored_history = [tuple(r) for r in await (await conn.execute(
                "SELECT ladder, player_id, before, after, match_id, event_id, at FROM history "
                "WHERE ladder = ? ORDER BY id", (ladder,))).fetchall()]
            if stored_history != [tuple(h) for h in history]:
                problems += 1
                print(f"{ladder}: rating history differs from the log "
                      f"({len(stored_history)} stored rows, {len(history)} replayed)", file=out)
        for ladder_row in await (await conn.execute(
                "SELECT DISTINCT ladder FROM ratings")).fetchall():
            if ladder_row[0] not in expected:
                print(f"{ladder_row[0]}: stored ratings for a ladder that is not configured",
                      file=out)
                problems += 1
    finally:
        await conn.execute("ROLLBACK")
    return problems


def _show(values: tuple[Any, ...] | None) -> str:
    if values is None:
        return "nothing"
    return ", ".join(f"{c} {v}" for c, v in zip(RATING_COLUMNS, values, strict=True))


async def rewrite(conn: aiosqlite.Connection, config: Config) -> int:
    """Replace ratings and history of every configured ladder with the replayed ones."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        expected = await _expected(conn, config)
        for ladder, (ratings, history) in expected.items():
            await conn.execute("DELETE FROM ratings WHERE ladder = ?", (ladder,))
            await conn.execute("DELETE FROM history WHERE ladder = ?", (ladder,))
            await conn.executemany(UPSERT, ratings)
            await conn.executemany(INSERT_HISTORY, history)
        await conn.execute("COMMIT")
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
    return sum(len(r) for r, _ in expected.values())


async def run(config: Config, check_only: bool, out: TextIO = sys.stdout) -> int:
    conn = await connect(config.database)
    try:
        await migrate(conn)
        if check_only:
            problems = await check(conn, config, out)
            if problems:
                print(f"replay --check: {problems} difference(s) between the log and the stored "
                      "ratings", file=out)
                return 1
            print("replay --check: every rating agrees with the match log", file=out)
            return 0
        count = await rewrite(conn, config)
        print(f"replay: rewrote {count} ratings of {len(config.ladders)} ladders from the log",
              file=out)
        return 0
    finally:
        await conn.close()
