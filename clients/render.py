"""Replies and pushes as text people read (the terminal client's output)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Renderer = Callable[[Any], str]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: set[str] | None = None
          ) -> str:
    """An aligned text table; columns named in ``right`` are right-aligned."""
    right = right or set()
    cells = [[str(h) for h in headers]] + [[_s(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if h in right else c.ljust(w)
                         for c, w, h in zip(r, widths, headers, strict=True)).rstrip()

    return "\n".join(line(r) for r in cells)


def _s(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def rating_text(row: dict[str, Any]) -> str:
    """The rating with the system's extras, as one phrase."""
    system = row.get("system")
    if system == "fibs" or "experience" in row:
        return f"rating {row['rating']:.2f}   experience {row.get('experience', 0)}"
    if system == "cas" or "paluba" in row:
        return (f"strength {row['rating']:<8}(Paluba {row['paluba']}, Dansa {row['dansa']}, "
                f"Peklo {row['peklo']:.1f})")
    return f"points {row['rating']:<10}{row.get('class', '')}"


def rank_text(row: dict[str, Any]) -> str:
    """ČAS publishes the active flag; the others mention only inactivity."""
    text = f"rank {row['rank']} of {row['of']}"
    if row.get("system") == "cas" or "paluba" in row:
        return text + (", active" if row.get("active", True) else ", inactive")
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


def whois(data: dict[str, Any]) -> str:
    lines = [f"Information about {data['player']}:", f"  {status_sentence(data)}"]
    ratings = data.get("ratings", [])
    width = max([len(r["ladder"]) for r in ratings] + [0])
    for r in ratings:
        lines.append(f"  {r['ladder'].ljust(width)}  {rating_text(r)}   {rank_text(r)}")
    if not ratings:
        lines.append("  No ratings yet.")
    m = data.get("matches", {})
    lines.append(f"  Matches: {m.get('played', 0)} played, {m.get('dropped', 0)} dropped, "
                 f"{m.get('disputed', 0)} disputed.")
    return "\n".join(lines)


def ladder_rows(system: str, rows: Sequence[dict[str, Any]]) -> str:
    extra = {"fibs": ["experience"], "p4p": ["class"], "cas": ["paluba", "dansa", "peklo"]}
    cols = extra.get(system, [])
    headers = ["rank", "player", "rating", "games", "active", *cols]
    body = []
    for r in rows:
        rating = f"{r['rating']:.2f}" if system == "fibs" else r["rating"]
        values = [r.get(c) for c in cols]
        if "peklo" in cols:
            values[-1] = f"{r['peklo']:.1f}"
        body.append([r["rank"], r["player"], rating, r["games"], r["active"], *values])
    return table(headers, body, right={"rank", "rating", "games", "experience", "paluba",
                                       "dansa", "peklo"})


def ladder(data: dict[str, Any]) -> str:
    head = f"{data['ladder']} ({data['system']}): {data['total']} players"
    if not data["players"]:
        return head + "\n  (nobody yet)"
    return head + "\n" + ladder_rows(data["system"], data["players"])


def rating(data: dict[str, Any]) -> str:
    if not data["ratings"]:
        return f"{data['player']} has no ratings yet."
    rows = [[r["ladder"], rating_text(r), rank_text(r), r["games"]] for r in data["ratings"]]
    return f"Ratings of {data['player']}:\n" + table(["ladder", "rating", "rank", "games"], rows,
                                                    right={"games"})


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _change(v: Any) -> str:
    if v is None:
        return "new"
    if isinstance(v, float):
        return f"{v:+.2f}"
    return f"{v:+d}"


def _cause(c: dict[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in c.items()]
    return ", ".join(parts) or "correction"


def history(data: dict[str, Any]) -> str:
    entries = data["entries"]
    if not entries:
        return f"{data['player']} has no rating history" + (
            f" in {data['ladder']}." if data.get("ladder") else ".")
    rows = [[e["at"].replace("T", " ").rstrip("Z"), e["ladder"], _num(e["before"]),
             _num(e["after"]), _change(e["change"]), _cause(e["cause"])] for e in entries]
    return f"Rating history of {data['player']}:\n" + table(
        ["when (UTC)", "ladder", "before", "after", "change", "cause"], rows,
        right={"before", "after", "change"})


def who(data: dict[str, Any]) -> str:
    players = data["players"]
    if not players:
        return f"Nobody is logged in ({_count(data.get('spectators', 0), 'spectator')})."
    rows = [[p["player"], p["status"],
             ", ".join(f"{k} {_num(v)}" for k, v in p["ratings"].items()) or "-"]
            for p in players]
    return table(["player", "status", "ratings"], rows) + \
        f"\n{_count(len(players), 'player')}, {_count(data.get('spectators', 0), 'spectator')}."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def ladders(data: dict[str, Any]) -> str:
    return table(["ladder", "system", "format", "updated", "players"],
                 [[x["ladder"], x["system"], x["format"], x["updated"], x["players"]]
                  for x in data["ladders"]], right={"players"})


def events(data: dict[str, Any]) -> str:
    if not data["events"]:
        return "No events."
    return table(["id", "name", "ladder", "date", "status", "games"],
                 [[e["id"], e["name"], e["ladder"], e["date"], e["status"], e["games"]]
                  for e in data["events"]], right={"id", "games"})


def event(data: dict[str, Any]) -> str:
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
        parts.append(changes(data["changes"]))
    return "\n".join(parts)


def changes(items: Sequence[dict[str, Any]]) -> str:
    return "\n".join(f"  {c['player']}: {_num(c['before'])} -> {_num(c['after'])} "
                     f"({_change(c['change'])})" for c in items)


def _length(length: Any) -> str:
    if isinstance(length, int):
        return f"{length} point" + ("" if length == 1 else "s")
    return str(length)


def match_finished(data: dict[str, Any]) -> str:
    head = (f"Match {data['match']} ({data['ladder']}, {_length(data['length'])}) won by "
            f"{data['winner']} ({data['how']}).")
    if not data.get("rated", True):
        return head + " Not rated."
    return head + "\n" + changes(data["changes"])


def help_(data: dict[str, Any]) -> str:
    if "commands" in data:
        return table(["usage", "who", "what"],
                     [[c["usage"], c["who"], c["summary"]] for c in data["commands"]])
    return f"{data['usage']}\n  {data['summary']}\n  For: {data['who']}"


def generic(data: Any) -> str:
    if isinstance(data, dict):
        return ", ".join(f"{k}: {_s(v)}" for k, v in data.items() if not isinstance(v, list | dict))
    return _s(data)


REPLIES: dict[str, Renderer] = {
    "whois": whois, "ladder": ladder, "rating": rating, "history": history, "who": who,
    "ladders": ladders, "events": events, "event show": event, "event close": event,
    "event create": event, "help": help_, "resign": match_finished, "confirm": match_finished,
    "claim": match_finished,
}


def render_reply(message: dict[str, Any]) -> str:
    """A reply (``ok`` true or false) as text; never raises on odd data."""
    if not message.get("ok"):
        err = message.get("error") or {}
        return f"Error ({err.get('code', '?')}): {err.get('message', '')}"
    cmd = message.get("cmd") or ""
    data = message.get("data")
    if cmd == "adjudicate" and isinstance(data, dict) and "winner" in data and "how" in data:
        return match_finished(data)
    try:
        return REPLIES.get(cmd, generic)(data)
    except (KeyError, TypeError, ValueError):
        return generic(data)


def render_push(message: dict[str, Any]) -> str:
    event_name = message.get("event", "?")
    d = message.get("data") or {}
    try:
        if event_name == "invited":
            return (f"** {d['from']} invites you to a {d['length']}-point {d['ladder']} match. "
                    f"Type 'join {d['from']}' or 'decline {d['from']}'.")
        if event_name == "match_started":
            return f"** Match {d['match']} started: {d['a']} vs {d['b']} ({d['ladder']})."
        if event_name == "match_finished":
            return "** " + match_finished(d)
        if event_name == "rating_changed":
            return (f"** {d['player']}'s {d['ladder']} rating: {_num(d['before'])} -> "
                    f"{_num(d['after'])} ({_change(d['change'])}).")
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
    except (KeyError, TypeError):
        pass
    return f"** {event_name}: {generic(d)}"
