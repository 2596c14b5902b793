"""The plugin's one table, ``streaks``: a row per player and ladder they have a counted game on.

Declared as a :class:`server.api.Schema`, so the lobby creates and migrates
it like its own. Its first version also fills it from the log already in the
database, so installing the plugin on a lobby with a history gives the streaks
that history made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from matchlobby_streaks.runs import Streak, advance, results
from server.api import LadderConfig, RatedUnit, Reader, Schema, Table, TableColumn, Tx

NAME = "streaks"
STREAKS = Table(NAME, (
    TableColumn("player_id", "integer", nullable=False),
    TableColumn("ladder", "text", nullable=False),
    TableColumn("current", "integer", nullable=False),
    TableColumn("best", "integer", nullable=False),
), primary_key=("player_id", "ladder"), clustered=True)  # a player's rows together: `streak`

UPSERT = """INSERT INTO streaks (player_id, ladder, current, best) VALUES (?, ?, ?, ?)
    ON CONFLICT (player_id, ladder) DO UPDATE SET current = excluded.current,
    best = excluded.best"""
DELETE_LADDER = "DELETE FROM streaks WHERE ladder = ?"
OF_PLAYER = "SELECT ladder, current, best FROM streaks WHERE player_id = ?"
CHUNK = 500  # ids per IN (...) list, well below any backend's limit on parameters


def schema(ladders: Sequence[LadderConfig]) -> Schema:
    async def fill(tx: Tx) -> None:
        for ladder in ladders:
            await rebuild(tx, ladder)

    return Schema(NAME, {1: (STREAKS, fill)})


def played(unit: RatedUnit, ladder: LadderConfig) -> list[tuple[int, bool]]:
    """The unit's counted results by player id."""
    return [(unit.player_ids[name], won) for name, won in results(ladder, unit)]


async def read(reader: Reader, ladder: str, ids: Iterable[int]) -> dict[int, Streak]:
    wanted = sorted(set(ids))
    found: dict[int, Streak] = {}
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start:start + CHUNK]
        rows = await reader.fetchall(
            f"SELECT player_id, current, best FROM streaks WHERE ladder = ? "
            f"AND player_id IN ({', '.join('?' * len(chunk))})", [ladder, *chunk])
        for row in rows:
            found[row[0]] = Streak(row[1], row[2])
    return found


async def write(tx: Tx, ladder: str, streaks: Mapping[int, Streak], ids: Iterable[int]) -> None:
    await tx.executemany(UPSERT, [(i, ladder, streaks[i].current, streaks[i].best)
                                  for i in sorted(ids)])


async def apply(tx: Tx, ladder: LadderConfig, unit: RatedUnit) -> None:
    """One new unit at the end of the log: its players' streaks move on."""
    done = played(unit, ladder)
    if not done:
        return
    streaks = await read(tx, ladder.name, (i for i, _ in done))
    await write(tx, ladder.name, streaks, advance(streaks, done))


async def rebuild(tx: Tx, ladder: LadderConfig) -> None:
    """The ladder's streaks made again from its whole log, as they would be had it always
    been what it is now (after a void or an adjudication changed its past)."""
    streaks: dict[int, Streak] = {}
    for unit in await tx.log.units(ladder.name):
        advance(streaks, played(unit, ladder))
    await tx.execute(DELETE_LADDER, [ladder.name])
    await write(tx, ladder.name, streaks, streaks)
