"""What a history entry tells besides the numbers: who the player met, how it went, on what
ladder and at what event, so that a row of the history reads as the story of a rating change.

A match's entry is that match (opponents, result, score, length); an event's entry (a ladder
rated when its event closes) is the player's games of the event (every opponent, the record).
Read from the lobby's log tables, read-only, one query per page of matches and one per event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.api import Reader

MATCHES = """SELECT m.id, m.event_id, e.name AS event_name, m.side_a, m.side_b, m.winner,
    m.score_a, m.score_b, m.length, m.how, m.status, m.unrated_reason
    FROM matches m LEFT JOIN events e ON e.id = m.event_id WHERE m.id IN ({})"""
EVENT_GAMES = """SELECT m.side_a, m.side_b, m.winner, m.status, m.unrated_reason, e.name
    FROM matches m JOIN match_players mp ON mp.match_id = m.id
    JOIN events e ON e.id = m.event_id
    WHERE m.event_id = ? AND mp.player_id = ? ORDER BY m.id"""
EVENT_NAME = "SELECT name FROM events WHERE id = ?"


def _sides(row: Any, player: str) -> tuple[str, list[str], list[str]] | None:
    """The player's side (``a`` or ``b``), their partners and their opponents."""
    key = player.casefold()
    a, b = row["side_a"].split("+"), row["side_b"].split("+")
    if key in (n.casefold() for n in a):
        return "a", [n for n in a if n.casefold() != key], b
    if key in (n.casefold() for n in b):
        return "b", [n for n in b if n.casefold() != key], a
    return None


def _result(winner: str | None, side: str) -> str | None:
    if winner is None:
        return None
    return "drawn" if winner == "draw" else "won" if winner == side else "lost"


def _rated(row: Any) -> bool:
    return bool(row["status"] == "finished" and row["unrated_reason"] is None)


def record_text(won: int, drawn: int, lost: int) -> str:
    """``2 won, 1 lost`` (draws only when there were some)."""
    parts = [f"{won} won"] + ([f"{drawn} drawn"] if drawn else []) + [f"{lost} lost"]
    return ", ".join(parts)


def _match_story(row: Any, player: str) -> dict[str, Any]:
    found = _sides(row, player)
    side, partners, opponents = found if found is not None else ("a", [], [])
    result = _result(row["winner"], side)
    mine, theirs = (row["score_a"], row["score_b"]) if side == "a" else (
        row["score_b"], row["score_a"])
    return {
        "match": row["id"], "opponents": opponents, "partners": partners, "result": result,
        "record": {"won": int(result == "won"), "drawn": int(result == "drawn"),
                   "lost": int(result == "lost")},
        "score": None if mine is None or theirs is None else [mine, theirs],
        "length": "unlimited" if row["length"] is None and row["event_id"] is None
        else row["length"], "how": row["how"], "games": 1,
        "event": None if row["event_id"] is None else {"id": row["event_id"],
                                                       "name": row["event_name"]},
        "rated": _rated(row)}


async def _event_story(reader: Reader, event_id: int, player: str,
                       player_id: int) -> tuple[dict[str, Any], int]:
    """The story of an event's entry, and the number of games read to tell it."""
    opponents: dict[str, None] = {}
    partners: dict[str, None] = {}
    counts = {"won": 0, "drawn": 0, "lost": 0}
    name = None
    rows = await reader.fetchall(EVENT_GAMES, (event_id, player_id))
    for row in rows:
        name = row["name"]
        if not _rated(row):
            continue
        found = _sides(row, player)
        if found is None:
            continue
        side, mates, others = found
        opponents.update(dict.fromkeys(others))
        partners.update(dict.fromkeys(mates))
        result = _result(row["winner"], side)
        if result is not None:
            counts[result] += 1
    if name is None:
        got = await reader.fetchone(EVENT_NAME, (event_id,))
        name = None if got is None else got[0]
    return {"match": None, "opponents": list(opponents), "partners": list(partners),
            "result": record_text(counts["won"], counts["drawn"], counts["lost"]),
            "record": counts, "score": None, "length": None, "how": None,
            "games": sum(counts.values()), "event": {"id": event_id, "name": name},
            "rated": True}, len(rows)


async def stories(reader: Reader, player: str, player_id: int,
                  rows: Sequence[Any]) -> tuple[list[dict[str, Any]], int]:
    """Each history row's story (:mod:`ratings_plugin.story`), in the order of ``rows``, and
    the number of event games read to tell them (rows the reply does not hold)."""
    ids = sorted({r["match_id"] for r in rows if r["match_id"] is not None})
    matches: dict[int, Any] = {}
    if ids:
        marks = ", ".join("?" * len(ids))
        matches = {m["id"]: m for m in await reader.fetchall(MATCHES.format(marks), ids)}
    events: dict[int, dict[str, Any]] = {}
    read = 0
    out = []
    for r in rows:
        if r["match_id"] is not None and r["match_id"] in matches:
            out.append(_match_story(matches[r["match_id"]], player))
        elif r["event_id"] is not None:
            if r["event_id"] not in events:
                events[r["event_id"]], games = await _event_story(reader, r["event_id"], player,
                                                                  player_id)
                read += games
            out.append(events[r["event_id"]])
        else:
            out.append({"match": r["match_id"], "opponents": [], "partners": [], "result": None,
                        "record": None,
                        "score": None, "length": None, "how": None, "games": 0,
                        "event": None, "rated": True})
    return out, read
