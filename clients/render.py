"""Replies and pushes as text people read (the terminal client's output).

Ratings are shown by the columns the server describes (``ladders`` and
``ladder`` replies, :mod:`clients.models`); a renderer is given the ladders it
knows, and shows a row of a ladder it does not know by the row's own values.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from clients.models import Column, LadderInfo, columns_from, guess_columns

Ladders = Mapping[str, LadderInfo]
Renderer = Callable[[Any, Ladders], str]
NO_LADDERS: Ladders = MappingProxyType({})
LEGEND_WIDTH = 80


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
          right: Collection[str | int] | None = None) -> str:
    """An aligned text table; columns named (or numbered) in ``right`` are right-aligned."""
    right = right or set()
    cells = [[str(h) for h in headers]] + [[_s(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    aligned = [h in right or i in right for i, h in enumerate(headers)]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if a else c.ljust(w)
                         for c, w, a in zip(r, widths, aligned, strict=True)).rstrip()

    return "\n".join(line(r) for r in cells)


def _s(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def word(label: str) -> str:
    """A column's label inside a line of text: lower case, unless it is an acronym (RD)."""
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def _columns(ladders: Ladders, row: Mapping[str, Any]) -> Sequence[Column]:
    info = ladders.get(row.get("ladder") or "")
    return info.columns if info is not None and info.columns else guess_columns(row)


def _rating_column(ladders: Ladders, ladder: Any, value: Any) -> Column:
    """How a rating of ``ladder`` is shown; by the value itself for a ladder not described."""
    info = ladders.get(ladder) if isinstance(ladder, str) else None
    if info is not None:
        return info.rating_column
    return Column.guess("rating", value) if isinstance(value, int | float) else Column(
        "rating", "Rating", "real")


def rating_text(row: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    """The rating and the system's other columns (not the games), as one phrase."""
    return "   ".join(f"{word(c.label)} {c.text(row.get(c.key))}"
                      for c in _columns(ladders, row) if c.key != "games")


def rank_text(row: dict[str, Any]) -> str:
    text = f"rank {row['rank']} of {row['of']}"
    return text if row.get("active", True) else text + ", inactive"


def status_sentence(data: dict[str, Any]) -> str:
    if data.get("online"):
        status = data.get("status")
        doing = {"playing": "Playing a match.", "away": "Away."}.get(status or "", "Ready to play.")
        return f"Still logged in. {doing}"
    last = data.get("last_login")
    if last:
        return f"Not logged in right now. Last login: {last.replace('T', ' ').rstrip('Z')} UTC."
    return "Never logged in."


def whois(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    lines = [f"Information about {data['player']}:", f"  {status_sentence(data)}"]
    ratings = data.get("ratings", [])
    phrases = [rating_text(r, ladders) for r in ratings]
    width = max([len(r["ladder"]) for r in ratings] + [0])
    room = max([len(p) for p in phrases] + [0])
    for r, phrase in zip(ratings, phrases, strict=True):
        lines.append(f"  {r['ladder'].ljust(width)}  {phrase.ljust(room)}   {rank_text(r)}")
    if not ratings:
        lines.append("  No ratings yet.")
    m = data.get("matches", {})
    lines.append(f"  Matches: {m.get('played', 0)} played, {m.get('dropped', 0)} dropped, "
                 f"{m.get('disputed', 0)} disputed.")
    return "\n".join(lines)


def ladder_rows(columns: Sequence[Column], rows: Sequence[dict[str, Any]]) -> str:
    """A ladder's rows under its columns, between the rank and player and the active mark."""
    headers = ["rank", "player", *(word(c.label) for c in columns), "active"]
    body = [[r["rank"], r["player"], *(c.text(r.get(c.key)) for c in columns), r["active"]]
            for r in rows]
    return table(headers, body, right={0, *(i for i, c in enumerate(columns, 2) if c.numeric)})


def legend(columns: Sequence[Column]) -> list[str]:
    """What each column that has a ``help`` text means, one wrapped entry per column."""
    return [line for c in columns if c.help
            for line in textwrap.wrap(f"{word(c.label)}: {c.help}", LEGEND_WIDTH,
                                      initial_indent="  ", subsequent_indent="    ")]


def ladder(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    head = f"{data['ladder']} ({data['system']}): {data['total']} players"
    if not data["players"]:
        return head + "\n  (nobody yet)"
    known = ladders.get(data["ladder"])
    columns = columns_from(data.get("columns")) or (known.columns if known else ()) or \
        columns_from(None, data["players"])
    return "\n".join([head, ladder_rows(columns, data["players"]), *legend(columns)])


def rating(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    if not data["ratings"]:
        return f"{data['player']} has no ratings yet."
    rows = [[r["ladder"], rating_text(r, ladders), rank_text(r), r["games"]]
            for r in data["ratings"]]
    return f"Ratings of {data['player']}:\n" + table(["ladder", "rating", "rank", "games"], rows,
                                                    right={"games"})


def _cause(c: dict[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in c.items()]
    return ", ".join(parts) or "correction"


def history(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    entries = data["entries"]
    if not entries:
        return f"{data['player']} has no rating history" + (
            f" in {data['ladder']}." if data.get("ladder") else ".")
    rows = []
    for e in entries:
        shown = _rating_column(ladders, e["ladder"], e["after"])
        rows.append([e["at"].replace("T", " ").rstrip("Z"), e["ladder"], shown.text(e["before"]),
                     shown.text(e["after"]), shown.change_text(e["change"]), _cause(e["cause"])])
    return f"Rating history of {data['player']}:\n" + table(
        ["when (UTC)", "ladder", "before", "after", "change", "cause"], rows,
        right={"before", "after", "change"})


def who(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    players = data["players"]
    if not players:
        return f"Nobody is logged in ({_count(data.get('spectators', 0), 'spectator')})."
    rows = [[p["player"], p["status"],
             ", ".join(f"{k} {_rating_column(ladders, k, v).text(v)}"
                       for k, v in p["ratings"].items()) or "-"]
            for p in players]
    return table(["player", "status", "ratings"], rows) + \
        f"\n{_count(len(players), 'player')}, {_count(data.get('spectators', 0), 'spectator')}."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def ladders(data: dict[str, Any], known: Ladders = NO_LADDERS) -> str:
    return table(["ladder", "system", "format", "live matches", "updated", "players"],
                 [[x["ladder"], x.get("system_title") or x["system"], x["format"],
                   x.get("live"), x["updated"], x["players"]] for x in data["ladders"]],
                 right={"players"})


def events(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    if not data["events"]:
        return "No events."
    return table(["id", "name", "ladder", "date", "status", "games"],
                 [[e["id"], e["name"], e["ladder"], e["date"], e["status"], e["games"]]
                  for e in data["events"]], right={"id", "games"})


def event(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    head = f"Event {data['id']}: {data['name']} ({data['ladder']}, {data['date']}, {data['status']})"
    parts = [head]
    if "games" in data and isinstance(data["games"], list):
        parts.append(table(["match", "side a", "side b", "score", "status"],
                           [[g["match"], g["side_a"], g["side_b"],
                             f"{_s(g['score_a'])}:{_s(g['score_b'])}",
                             g["status"] if g.get("rated", True) else f"unrated ({g['unrated']})"]
                            for g in data["games"]], right={"match"}))
    if data.get("standings"):
        parts.append(table(["player", "played", "won", "drawn", "lost", "points"],
                           [[s["player"], s["played"], s["won"], s["drawn"], s["lost"],
                             s["points"]] for s in data["standings"]],
                           right={"played", "won", "drawn", "lost", "points"}))
    if data.get("changes"):
        parts.append(changes(data["changes"], data["ladder"], ladders))
    return "\n".join(parts)


def change_text(c: dict[str, Any], ladder: Any, ladders: Ladders) -> str:
    """``before -> after (change)`` of one rating, shown as the ladder's rating column."""
    shown = _rating_column(ladders, ladder, c["after"])
    return f"{shown.text(c['before'])} -> {shown.text(c['after'])} ({shown.change_text(c['change'])})"


def changes(items: Sequence[dict[str, Any]], ladder: Any, ladders: Ladders = NO_LADDERS) -> str:
    return "\n".join(f"  {c['player']}: {change_text(c, ladder, ladders)}" for c in items)


def _length(length: Any) -> str:
    if isinstance(length, int):
        return f"{length} point" + ("" if length == 1 else "s")
    return str(length)


def match_finished(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    head = (f"Match {data['match']} ({data['ladder']}, {_length(data['length'])}) won by "
            f"{data['winner']} ({data['how']}).")
    if not data.get("rated", True):
        return head + " Not rated."
    return head + "\n" + changes(data["changes"], data["ladder"], ladders)


def help_(data: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    if "commands" in data:
        return table(["usage", "who", "what"],
                     [[c["usage"], c["who"], c["summary"]] for c in data["commands"]])
    return f"{data['usage']}\n  {data['summary']}\n  For: {data['who']}"


def generic(data: Any, ladders: Ladders = NO_LADDERS) -> str:
    if isinstance(data, dict):
        return ", ".join(f"{k}: {_s(v)}" for k, v in data.items() if not isinstance(v, list | dict))
    return _s(data)


REPLIES: dict[str, Renderer] = {
    "whois": whois, "ladder": ladder, "rating": rating, "history": history, "who": who,
    "ladders": ladders, "events": events, "event show": event, "event close": event,
    "event create": event, "help": help_, "resign": match_finished, "confirm": match_finished,
    "claim": match_finished,
}


def render_reply(message: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    """A reply (``ok`` true or false) as text; never raises on odd data. ``ladders``: the
    ladders described so far (a ``ladders`` reply), by name."""
    if not message.get("ok"):
        err = message.get("error") or {}
        return f"Error ({err.get('code', '?')}): {err.get('message', '')}"
    cmd = message.get("cmd") or ""
    data = message.get("data")
    if cmd == "adjudicate" and isinstance(data, dict) and "winner" in data and "how" in data:
        return match_finished(data, ladders)
    try:
        return REPLIES.get(cmd, generic)(data, ladders)
    except (KeyError, TypeError, ValueError, AttributeError):
        return generic(data)


def render_push(message: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    event_name = message.get("event", "?")
    d = message.get("data") or {}
    try:
        if event_name == "invited":
            return (f"** {d['from']} invites you to a {d['length']}-point {d['ladder']} match. "
                    f"Type 'join {d['from']}' or 'decline {d['from']}'.")
        if event_name == "match_started":
            return f"** Match {d['match']} started: {d['a']} vs {d['b']} ({d['ladder']})."
        if event_name == "match_finished":
            return "** " + match_finished(d, ladders)
        if event_name == "rating_changed":
            return f"** {d['player']}'s {d['ladder']} rating: {change_text(d, d['ladder'], ladders)}."
        if event_name == "result_claimed":
            return (f"** {d['by']} claims a win in match {d['match']}. Type 'confirm {d['match']}'"
                    f" or 'dispute {d['match']}'.")
        if event_name == "ladder_updated":
            return f"** Ladder {d['ladder']} updated ({len(d['players'])} players)."
        if event_name in ("player_online", "player_offline"):
            return f"** {d['player']} {'logged in' if event_name == 'player_online' else 'left'}."
        if event_name == "logged_out":
            return f"** {d['reason']}"
        if event_name == "hello":
            return f"Connected to {d['server']} {d['version']} (protocol {d['protocol']})."
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
    return f"** {event_name}: {generic(d)}"
