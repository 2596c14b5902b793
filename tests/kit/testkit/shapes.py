"""Ladders described as the server describes them (its ``ladders`` reply), for the renderers'
and the models' tests; one made-up system, unknown to every client, shows that nothing in
them is per system."""

from __future__ import annotations

from typing import Any

from clients.models import LadderInfo

FIBS_COLUMNS = [
    {"key": "rating", "label": "Rating", "type": "real", "decimals": 2},
    {"key": "experience", "label": "Experience", "type": "integer",
     "help": "The lengths of every rated match added up."},
    {"key": "games", "label": "Matches", "type": "integer"}]
CAS_COLUMNS = [
    {"key": "rating", "label": "Strength", "type": "integer",
     "help": "0–1000: the mean of Paluba, Dansa and Peklo, each scaled so that the ladder's "
             "lowest is 0 and its highest 1000. Every close rescales, so a player can move "
             "without playing."},
    {"key": "paluba", "label": "Paluba", "type": "integer",
     "help": "Short-term form, from the scores."},
    {"key": "dansa", "label": "Dansa", "type": "integer",
     "help": "Medium-term form (NSA-style rating)."},
    {"key": "peklo", "label": "Peklo", "type": "real", "decimals": 1,
     "help": "Long-term strength fitted to every game ever rated."},
    {"key": "games", "label": "Games", "type": "integer"}]
P4P_COLUMNS = [
    {"key": "rating", "label": "Points", "type": "integer"},
    {"key": "class", "label": "Class", "type": "text",
     "help": "Newcomer below 500 points, Amateur below 1000, Master below 1500, then Elite."},
    {"key": "games", "label": "Games", "type": "integer"}]
ZETA_COLUMNS = [  # a system no client knows: none of these keys or labels is in clients/
    {"key": "rating", "label": "Score", "type": "integer", "help": "Whole points."},
    {"key": "elo", "label": "Elo", "type": "real", "decimals": 1,
     "help": "An estimate on the Elo scale."},
    {"key": "streak", "label": "Streak", "type": "boolean", "help": "Won the last game."},
    {"key": "mood", "label": "Mood", "type": "text"},
    {"key": "seen", "label": "Seen", "type": "date"},  # a type clients do not know: text
    {"key": "games", "label": "Played", "type": "integer"}]
LADDERS_REPLY: dict[str, Any] = {"ladders": [
    {"ladder": "backgammon", "system": "fibs", "system_title": "FIBS", "format": "singles",
     "updated": "after each match", "live": True, "columns": FIBS_COLUMNS, "players": 40},
    {"ladder": "scrabble", "system": "cas", "system_title": "ČAS", "format": "singles",
     "updated": "when an event closes", "live": False, "columns": CAS_COLUMNS, "players": 31},
    {"ladder": "foosball-doubles", "system": "p4p", "system_title": "P4P", "format": "doubles",
     "updated": "when an event closes", "live": False, "columns": P4P_COLUMNS, "players": 22},
    {"ladder": "go", "system": "zeta", "system_title": "Zeta", "format": "singles",
     "updated": "after each match", "live": True, "columns": ZETA_COLUMNS, "players": 2}]}
LADDERS = {x["ladder"]: LadderInfo.from_dict(x) for x in LADDERS_REPLY["ladders"]}
ZETA_ROWS: list[dict[str, Any]] = [
    {"rank": 1, "of": 2, "player": "alice", "rating": 1613, "elo": 1612.96, "streak": True,
     "mood": "calm", "seen": "2026-12-01", "games": 7, "active": True},
    {"rank": 2, "of": 2, "player": "bob", "rating": 1387, "elo": 1387.04, "streak": False,
     "mood": None, "seen": "2026-11-02", "games": 7, "active": False}]
