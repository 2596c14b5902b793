"""The ratings plugin's tables: standings, history and the shared values of whole ladders.

- ``ratings``: one row per ladder and player: the rating history records,
  rated games, the last day played and the system's own fields as JSON
  (``state``), so a new system needs no new column.
- ``history``: every change of a shown rating, with its cause.
- ``shared_values``: for a system whose every unit moves a value of every
  player (ČAS's Peklo), one row per ladder holding two little-endian blobs
  of the same length, player ids (int64) and values (float64, bit for bit).
  A close then writes the ``ratings`` rows whose shown rating changed and
  this one row, not the whole ladder's rows. A player absent from it has the
  value a new standing has.

A database made before the plugin owned its tables keeps them: the first
version's :func:`adopt` moves the old columns into this layout.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from server.api import Index, LadderConfig, Schema, StoredStanding, Table, TableColumn, Tx
from server.api.systems import shared_field

RatingRow = tuple[str, int, float, int, str | None, str]
"""ladder, player id, rating, games, last played, state (JSON)."""

RATINGS = Table("ratings", (
    TableColumn("ladder", "text", nullable=False),
    TableColumn("player_id", "integer", nullable=False),
    TableColumn("rating", "real", nullable=False),
    TableColumn("games", "integer", nullable=False),
    TableColumn("last_played", "text"),
    TableColumn("state", "text", nullable=False),
), primary_key=("ladder", "player_id"), clustered=True)
HISTORY = Table("history", (
    TableColumn("id", "integer", nullable=False),
    TableColumn("ladder", "text", nullable=False),
    TableColumn("player_id", "integer", nullable=False),
    TableColumn("before", "real"),
    TableColumn("after", "real", nullable=False),
    TableColumn("match_id", "integer"),
    TableColumn("event_id", "integer"),
    TableColumn("at", "text", nullable=False),
), primary_key=("id",), autoincrement="id")
SHARED = Table("shared_values", (
    TableColumn("ladder", "text", nullable=False),
    TableColumn("player_ids", "blob", nullable=False),
    TableColumn("vals", "blob", nullable=False),
), primary_key=("ladder",))
HISTORY_PLAYER = Index("history_player", "history", ("player_id", "ladder", "id"))
HISTORY_LADDER = Index("history_ladder", "history", ("ladder",))

UPSERT = """INSERT INTO ratings (ladder, player_id, rating, games, last_played, state)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (ladder, player_id) DO UPDATE SET rating = excluded.rating,
    games = excluded.games, last_played = excluded.last_played, state = excluded.state"""
INSERT_RATINGS = """INSERT INTO ratings (ladder, player_id, rating, games, last_played, state)
    VALUES (?, ?, ?, ?, ?, ?)"""
INSERT_HISTORY = """INSERT INTO history (ladder, player_id, before, after, match_id, event_id, at)
    VALUES (?, ?, ?, ?, ?, ?, ?)"""
SELECT_RATINGS = """SELECT r.ladder, r.player_id, r.rating, r.games, r.last_played, r.state, p.name
    FROM ratings r JOIN players p ON p.id = r.player_id"""
HISTORY_TOP = "SELECT ladder, max(id) FROM history GROUP BY ladder"
HISTORY_SINCE = "SELECT id, player_id FROM history WHERE id > ? AND ladder = ?"


def select_ratings_of(players: int) -> str:
    """:data:`SELECT_RATINGS` of one ladder (the first parameter) and ``players`` ids."""
    return (SELECT_RATINGS + " WHERE r.ladder = ? AND r.player_id IN ("
            + ", ".join("?" for _ in range(players)) + ")")


SHARED_UPSERT = """INSERT INTO shared_values (ladder, player_ids, vals) VALUES (?, ?, ?)
    ON CONFLICT (ladder) DO UPDATE SET player_ids = excluded.player_ids, vals = excluded.vals"""
SHARED_DELETE = "DELETE FROM shared_values WHERE ladder = ?"
SHARED_SELECT = "SELECT ladder, player_ids, vals FROM shared_values"

_SWAP = sys.byteorder != "little"


def state_json(state: Mapping[str, Any]) -> str:
    return orjson.dumps(state).decode()


def rating_rows(ladder: LadderConfig, standings: Iterable[Any], ids: Mapping[str, int]
                ) -> Iterator[RatingRow]:
    """The ``ratings`` rows of ``standings``, made one at a time as they are written (a ČAS
    close writes the whole ladder: no list of 20,000 tuples to build and collect)."""
    encode = ladder.system.encode
    for s in standings:
        stored = encode(s)
        yield (ladder.name, ids[s.player], float(stored.rating), stored.games,
               stored.last_played, state_json(stored.state))


def stored(row: Sequence[Any]) -> StoredStanding:
    """A ``ratings`` row (as :data:`SELECT_RATINGS` reads it) as the system decodes it."""
    return StoredStanding(row[2], row[3], row[4], orjson.loads(row[5]))


def encode_shared(ladder: str, player_ids: Sequence[int], values: Sequence[float]
                  ) -> tuple[str, bytes, bytes]:
    """A ``shared_values`` row of ``ladder``."""
    if len(player_ids) != len(values):
        raise ValueError("as many shared values as player ids are needed")
    ids, vals = array("q", player_ids), array("d", values)
    if _SWAP:
        ids.byteswap()
        vals.byteswap()
    return ladder, ids.tobytes(), vals.tobytes()


def decode_shared(player_ids: bytes, values: bytes) -> dict[int, float]:
    """Player id → value, from a row :func:`encode_shared` made."""
    ids, vals = array("q"), array("d")
    ids.frombytes(player_ids)
    vals.frombytes(values)
    if len(ids) != len(vals):
        raise ValueError("a shared_values row's player ids and values differ in length")
    if _SWAP:
        ids.byteswap()
        vals.byteswap()
    return dict(zip(ids, vals, strict=True))


def shared_by_ladder(rows: Iterable[Sequence[Any]]) -> dict[str, dict[int, float]]:
    return {row[0]: decode_shared(row[1], row[2]) for row in rows}


def shared_row(ladder: LadderConfig, standings: Iterable[Any], ids: Mapping[str, int]
               ) -> tuple[str, bytes, bytes]:
    """The ladder's shared values (the system's ``shared_field`` of every standing)."""
    field = shared_field(ladder.system)
    assert field is not None
    standings = list(standings)
    return encode_shared(ladder.name, [ids[s.player] for s in standings],
                         [float(getattr(s, field)) for s in standings])


async def write_ladder(tx: Tx, ladder: LadderConfig, standings: Iterable[Any],
                       ids: Mapping[str, int]) -> list[RatingRow]:
    """Replace what is stored of ``ladder``'s standings (not its history) with ``standings``."""
    standings = list(standings)
    rows = sorted(rating_rows(ladder, standings, ids))
    await tx.execute("DELETE FROM ratings WHERE ladder = ?", (ladder.name,))
    await tx.execute(SHARED_DELETE, (ladder.name,))
    await tx.executemany(INSERT_RATINGS, rows)  # none left to conflict with: a bulk insert
    if shared_field(ladder.system) is not None and standings:
        await tx.executemany(SHARED_UPSERT, [shared_row(ladder, standings, ids)])
    return rows


# ---- the first version: created, or adopted from a database made before ------------------------

LEGACY_FIELDS = ("experience", "paluba", "dansa")


def schema(ladders: Sequence[LadderConfig]) -> Schema:
    """The plugin's tables; ``ladders`` tell an adopted database's rows which system's they are."""

    async def adopt(tx: Tx) -> None:
        await _adopt_before(tx)

    async def copy(tx: Tx) -> None:
        await _adopt_after(tx, {x.name: x for x in ladders})

    return Schema("ratings", {1: (adopt, RATINGS, HISTORY, HISTORY_PLAYER, HISTORY_LADDER,
                                  SHARED, copy)})


async def _columns(tx: Tx, table: str) -> list[str]:
    if tx.backend != "sqlite":
        return []  # a database made before the plugin API is always SQLite
    return [r[1] for r in await tx.fetchall(f"PRAGMA table_info({table})")]


async def _adopt_before(tx: Tx) -> None:
    """Set the old ``ratings`` table aside (its columns were every system's fields)."""
    columns = await _columns(tx, "ratings")
    if columns and "state" not in columns:
        await tx.execute("ALTER TABLE ratings RENAME TO ratings_before")


async def _adopt_after(tx: Tx, ladders: Mapping[str, LadderConfig]) -> None:
    """Copy the old rows into the new layout, every value as it was (the ``history`` table kept
    its layout; Peklo values become the ČAS ladders' shared values)."""
    columns = await _columns(tx, "ratings_before")
    if not columns:
        return
    keys: dict[str, tuple[str, ...]] = {}
    for name, ladder in ladders.items():
        keys[name] = tuple(ladder.system.encode(ladder.system.new_book(ladder.options)
                                                .new_standing("x")).state)
    rows = await tx.fetchall("SELECT * FROM ratings_before ORDER BY ladder, player_id")
    out = []
    for r in rows:
        fields = keys.get(r["ladder"], LEGACY_FIELDS)
        state = {k: r[k] for k in fields if k in LEGACY_FIELDS}
        out.append((r["ladder"], r["player_id"], r["rating"], r["games"], r["last_played"],
                    state_json(state)))
    await tx.executemany(UPSERT, out)
    if "peklo" in columns:  # the oldest layout: Peklo values in a column
        by_ladder: dict[str, tuple[list[int], list[float]]] = {}
        for r in rows:
            if r["peklo"] != 1500.0:
                ids, vals = by_ladder.setdefault(r["ladder"], ([], []))
                ids.append(r["player_id"])
                vals.append(r["peklo"])
        await tx.executemany(SHARED_UPSERT, [encode_shared(ladder, ids, vals)
                                             for ladder, (ids, vals) in by_ladder.items()])
    await tx.execute("DROP TABLE ratings_before")
    if await _columns(tx, "peklo"):
        await tx.execute("INSERT INTO shared_values (ladder, player_ids, vals) "
                         "SELECT ladder, player_ids, elos FROM peklo")
        await tx.execute("DROP TABLE peklo")
