"""Stored replies: a mutating request's reply kept with its result, for retries."""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx

STORE = ("INSERT INTO requests (player_id, request_id, cmd, args_hash, reply, at) "
         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (player_id, request_id) DO UPDATE SET "
         "cmd = excluded.cmd, args_hash = excluded.args_hash, reply = excluded.reply, "
         "at = excluded.at")


async def prune(tx: WriteTx, before: str) -> None:
    await tx.execute("DELETE FROM requests WHERE at < ?", (before,))


async def keys(db: Reads) -> list[tuple[int, str]]:
    return [(row[0], row[1]) for row in await db.fetchall(
        "SELECT player_id, request_id FROM requests")]


async def find(db: Reads, player_id: int, request_id: str) -> Any | None:
    return await db.fetchone(
        "SELECT cmd, args_hash, reply, at FROM requests WHERE player_id = ? AND request_id = ?",
        (player_id, request_id))


STORE_ONCE = ("INSERT INTO requests (player_id, request_id, cmd, args_hash, reply, at) "
              "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (player_id, request_id) DO UPDATE SET "
              "cmd = excluded.cmd, args_hash = excluded.args_hash, reply = excluded.reply, "
              "at = excluded.at WHERE requests.cmd <> excluded.cmd "
              "OR requests.args_hash <> excluded.args_hash OR requests.at < ?")


async def store_once(tx: WriteTx, player_id: int, request_id: str, cmd: str, args_hash: str,
                     reply: str, at: str, older_than: str) -> bool:
    """Store the reply unless the same request (command and arguments) was answered since
    ``older_than``; whether it was stored. One statement, its changed rows counted (on
    PostgreSQL in the round trip of the job's queued writes): no read before the write."""
    return await tx.rows([(STORE_ONCE, (player_id, request_id, cmd, args_hash, reply, at,
                                        older_than))]) > 0


async def find_in(tx: WriteTx, player_id: int, request_id: str) -> Any | None:
    """:func:`find` inside a write job (after :func:`store_once` found it stored: committed)."""
    return await tx.fetchone(
        "SELECT cmd, args_hash, reply, at FROM requests WHERE player_id = ? AND request_id = ?",
        (player_id, request_id))


async def store(tx: WriteTx, player_id: int, request_id: str, cmd: str, args_hash: str,
                reply: str, at: str) -> None:
    await tx.later(STORE, (player_id, request_id, cmd, args_hash, reply, at))
