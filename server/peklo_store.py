"""A ladder's Peklo values, stored as one row per ladder rather than a column per player.

Every ČAS close solves Peklo again over the whole history, so it moves every
player's value while the displayed ratings of most players stay as they were.
Keeping the values in a ``ratings`` column made each close rewrite all of a
ladder's rows (20,000 rows for one event on a big ladder); kept here, a close
writes the rows of the players whose stored ratings changed and one row for
the ladder's Peklo values.

The row holds two blobs of the same length, little-endian whatever the
machine: player ids (int64) and Peklo values (float64, bit for bit). A player
absent from them has :data:`DEFAULT`, the value every standing starts with,
which is also what a FIBS or P4P standing always holds: such ladders need no
row, and the schema migration only moves the values that differ from it.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

DEFAULT = 1500.0

TABLE = """CREATE TABLE peklo (
    ladder TEXT PRIMARY KEY,
    player_ids BLOB NOT NULL,
    elos BLOB NOT NULL
)"""
UPSERT = "INSERT OR REPLACE INTO peklo (ladder, player_ids, elos) VALUES (?, ?, ?)"
DELETE = "DELETE FROM peklo WHERE ladder = ?"
SELECT = "SELECT ladder, player_ids, elos FROM peklo"

_SWAP = sys.byteorder != "little"


def encode(ladder: str, values: Iterable[tuple[int, float]]) -> tuple[str, bytes, bytes]:
    """The ``peklo`` row of ``ladder`` holding ``values`` (player id, Peklo value)."""
    pairs = list(values)
    return encode_columns(ladder, [pid for pid, _ in pairs], [elo for _, elo in pairs])


def encode_columns(ladder: str, player_ids: list[int], values: list[float]
                   ) -> tuple[str, bytes, bytes]:
    """:func:`encode` from the two columns (a ČAS close encodes a whole ladder)."""
    if len(player_ids) != len(values):
        raise ValueError("as many Peklo values as player ids are needed")
    ids, elos = array("q", player_ids), array("d", values)
    if _SWAP:
        ids.byteswap()
        elos.byteswap()
    return ladder, ids.tobytes(), elos.tobytes()


def decode(player_ids: bytes, elos: bytes) -> dict[int, float]:
    """Player id → Peklo value, from a row :func:`encode` made."""
    ids, values = array("q"), array("d")
    ids.frombytes(player_ids)
    values.frombytes(elos)
    if len(ids) != len(values):
        raise ValueError("a peklo row's player ids and values differ in length")
    if _SWAP:
        ids.byteswap()
        values.byteswap()
    return dict(zip(ids, values, strict=True))


def by_ladder(rows: Iterable[Sequence[Any]]) -> dict[str, dict[int, float]]:
    """Every ladder's values from the rows of :data:`SELECT`."""
    return {ladder: decode(player_ids, elos) for ladder, player_ids, elos in rows}
