"""Replies and pushes as text people read (the terminal client's output).

Ratings are shown by the columns the server describes (``ladders`` and
``ladder`` replies, :mod:`clients.models`); a renderer is given the ladders it
knows, and shows a row of a ladder it does not know by the row's own values.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from clients import ban_lines, evaluation_lines, talk_lines
from clients.any_shape import shaped
from clients.lobby_client import restart_wait
from clients.models import Column, LadderInfo, columns_from, guess_columns

Ladders = Mapping[str, LadderInfo]
NO_LADDERS: Ladders = MappingProxyType({})
LEGEND_WIDTH = 80
HELP_SUMMARY_MIN = 30
"""Columns ``help``'s summaries keep at least, however narrow the terminal."""


@dataclass(frozen=True)
class Viewer:
    """Who reads the text (``me``, their ``role``) and how wide their screen is (``None``:
    lines are not wrapped): "your invitation" rather than "alice's"."""

    me: str | None = None
    role: str | None = None
    width: int | None = None

    def mine(self, name: Any) -> bool:
        return isinstance(name, str) and self.me is not None and name.casefold() == \
            self.me.casefold()

    def whose(self, name: str) -> str:
        return "Your" if self.mine(name) else f"{name}'s"


NOBODY = Viewer()
Renderer = Callable[[Any, Ladders, Viewer], str]


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
        doing = {"playing": "Playing a match.", "away": "Away.",
                 "not_ready": "Not taking invitations."}.get(status or "", "Ready to play.")
        return f"Still logged in. {doing}"
    last = data.get("last_login")
    if last:
        return f"Not logged in right now. Last login: {last.replace('T', ' ').rstrip('Z')} UTC."
    return "Never logged in."


def whois(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
          viewer: Viewer = NOBODY) -> str:
    lines = [f"Information about {data['player']}:", f"  {status_sentence(data)}"]
    if isinstance(data.get("match"), dict):
        lines.append(f"  {match_line(data['match'], 'In match')}")
        lines += ["  " + line for line in stake_lines(data["match"].get("stake"), ladders)]
    ratings = data.get("ratings", [])
    phrases = [rating_text(r, ladders) for r in ratings]
    width = max([len(r["ladder"]) for r in ratings] + [0])
    room = max([len(p) for p in phrases] + [0])
    for r, phrase in zip(ratings, phrases, strict=True):
        lines.append(f"  {r['ladder'].ljust(width)}  {phrase.ljust(room)}   {rank_text(r)}")
    if not ratings:
        lines.append("  No ratings yet.")
    lines += [f"  {waiting_line(d)}" for d in data.get("disputes") or []]
    m = data.get("matches", {})
    lines.append(f"  Matches: {m.get('played', 0)} played, {m.get('dropped', 0)} dropped, "
                 f"{m.get('disputed', 0)} disputed.")
    return "\n".join(lines)


def waiting_line(d: dict[str, Any]) -> str:
    """A disputed match waiting for an admin (its players play on meanwhile)."""
    since = f" since {d['since'].replace('T', ' ').rstrip('Z')} UTC" if d.get("since") else ""
    return (f"Match {d['match']} ({d['a']} vs {d['b']}, {d['ladder']}) is disputed{since}; "
            "an admin will decide it.")


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


def system_title(ladder: Any, system: Any, ladders: Ladders) -> str:
    """A ladder's rating system as the ``ladders`` reply names it (FIBS), else its short name."""
    info = ladders.get(ladder) if isinstance(ladder, str) else None
    return info.system_title if info is not None else _s(system)


def ladder(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
           viewer: Viewer = NOBODY) -> str:
    head = (f"{data['ladder']} ({system_title(data['ladder'], data['system'], ladders)}): "
            f"{data['total']} players")
    if not data["players"]:
        return head + "\n  (nobody yet)"
    known = ladders.get(data["ladder"])
    columns = columns_from(data.get("columns")) or (known.columns if known else ()) or \
        columns_from(None, data["players"])
    return "\n".join([head, ladder_rows(columns, data["players"]), *legend(columns)])


def rating_sentence(row: dict[str, Any], ladders: Ladders = NO_LADDERS) -> str:
    """``backgammon (FIBS): rating 1523.41, experience 812; rank 3 of 40 after 112 games.``:
    each ladder's own columns, so ladders of different systems read alike."""
    columns = _columns(ladders, row)
    values = ", ".join(f"{word(c.label)} {c.text(row.get(c.key))}"
                       for c in columns if c.key != "games")
    inactive = "" if row.get("active", True) else " (inactive)"
    played = next((word(c.label) for c in columns if c.key == "games"), "games")
    return (f"{row['ladder']} ({system_title(row['ladder'], row.get('system'), ladders)}): "
            f"{values}; rank {row['rank']} of {row['of']}{inactive}; "
            f"{_tally(row['games'], played)}.")


def _tally(n: Any, label: str) -> str:
    """``112 matches``, ``1 match``; ``played 7`` for a label that is not a plural noun."""
    if not label.endswith("s"):
        return f"{label} {_s(n)}"
    if n != 1:
        return f"{_s(n)} {label}"
    return f"1 {label[:-2] if label.endswith(('ches', 'shes', 'sses', 'xes')) else label[:-1]}"


def rating(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
           viewer: Viewer = NOBODY) -> str:
    if not data["ratings"]:
        return f"{data['player']} has no ratings yet."
    return "\n".join([f"Ratings of {data['player']}:",
                      *(f"  {rating_sentence(r, ladders)}" for r in data["ratings"])])


def _cause(c: dict[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in c.items()]
    return ", ".join(parts) or "correction"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def story(e: dict[str, Any]) -> str:
    """What a history entry was about, in a line: "won 3-1 v bob, 3 points, match 17", "1 won,
    1 lost v bob, carol at Brno Open (#3)"; a server that tells no story: its cause."""
    if "opponents" not in e:
        return _cause(e["cause"])
    result = e.get("result") or "-"
    score = e.get("score")
    parts = [f"{result} {score[0]}-{score[1]}" if score else result]
    if e.get("opponents"):
        mates = f"with {_names(e['partners'])} " if e.get("partners") else ""
        parts[0] += f" {mates}v {_names(e['opponents'])}"
    length = e.get("length")
    if length is not None:
        parts.append("unlimited" if length == "unlimited" else _count(int(length), "point"))
    if e.get("match") is not None:
        parts.append(f"match {e['match']}")
    text = ", ".join(parts)
    event = e.get("event")
    if event:
        text += f" at {event.get('name') or 'event'} (#{event['id']})"
    return text if e.get("rated", True) else f"{text} (unrated)"


def history(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
            viewer: Viewer = NOBODY) -> str:
    entries = data["entries"]
    if not entries:
        return f"{data['player']} has no rating history" + (
            f" in {data['ladder']}." if data.get("ladder") else ".")
    rows = []
    for e in entries:
        shown = _rating_column(ladders, e["ladder"], e["after"])
        rows.append([e["at"].replace("T", " ").rstrip("Z"), e["ladder"], shown.text(e["before"]),
                     shown.text(e["after"]), shown.change_text(e["change"]), story(e)])
    return f"Rating history of {data['player']}:\n" + table(
        ["when (UTC)", "ladder", "before", "after", "change", "what happened"], rows,
        right={"before", "after", "change"})


def who(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
        viewer: Viewer = NOBODY) -> str:
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


def ladders(data: dict[str, Any], known: Ladders = NO_LADDERS, viewer: Viewer = NOBODY) -> str:
    return table(["ladder", "system", "format", "live matches", "updated", "players"],
                 [[x["ladder"], x.get("system_title") or x["system"], x["format"],
                   x.get("live"), x["updated"], x["players"]] for x in data["ladders"]],
                 right={"players"})


def events(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
           viewer: Viewer = NOBODY) -> str:
    if not data["events"]:
        return "No events."
    return table(["id", "name", "ladder", "date", "status", "games"],
                 [[e["id"], e["name"], e["ladder"], e["date"], e["status"], e["games"]]
                  for e in data["events"]], right={"id", "games"})


def event(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
          viewer: Viewer = NOBODY) -> str:
    head = f"Event {data['id']}: {data['name']} ({data['ladder']}, {data['date']}, {data['status']})"
    parts = [head]
    if "games" in data and isinstance(data["games"], list):
        parts.append(table(["match", "side a", "side b", "score", "status"],
                           [[g["match"], g["side_a"], g["side_b"],
                             f"{_s(g['score_a'])}:{_s(g['score_b'])}",
                             g["status"] if g["status"] != "finished" or g.get("rated", True)
                             else f"unrated ({g['unrated']})"]
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


def _played(c: Mapping[str, Any]) -> str:
    """Whether an event close moved a rating by a game or only by rescaling the ladder; nothing
    where the server does not say (a change of a match)."""
    if "played" not in c:
        return ""
    return ", played" if c["played"] else ", moved by normalisation (did not play)"


def changes(items: Sequence[dict[str, Any]], ladder: Any, ladders: Ladders = NO_LADDERS) -> str:
    return "\n".join(f"  {c['player']}: {change_text(c, ladder, ladders)}{_played(c)}"
                     for c in items)


def _length(length: Any) -> str:
    if isinstance(length, int):
        return f"{length} point" + ("" if length == 1 else "s")
    return str(length)


def _article(phrase: str) -> str:
    """``a`` or ``an`` as the phrase is spoken (an 8-point, an 11-point, an unlimited)."""
    first = phrase.split("-")[0]
    spoken_vowel = phrase[:1] in "aeiouAEIOU8" or first in ("11", "18") or (
        first.isdigit() and len(first) in (5, 6) and first[:2] in ("11", "18"))
    return f"an {phrase}" if spoken_vowel else f"a {phrase}"


def match_kind(length: Any, ladder: Any) -> str:
    """``a 3-point backgammon match``; ``an unlimited (unrated) backgammon match``."""
    size = f"{length}-point" if isinstance(length, int) else (
        "unlimited (unrated)" if str(length).lower() == "unlimited" else str(length))
    return f"{_article(size)} {ladder} match"


def clock(stamp: Any) -> str:
    """A timestamp of today's kind (``2026-12-01T20:58:30Z``) as ``20:58:30 UTC``."""
    if not isinstance(stamp, str) or "T" not in stamp:
        return _s(stamp)
    return stamp.split("T", 1)[1].rstrip("Z") + " UTC"


def _open_until(expires_at: Any) -> str:
    return f", open until {clock(expires_at)}" if expires_at else ""


def _percent(chance: Any) -> str:
    return f"{chance * 100:.1f}%" if isinstance(chance, int | float) else _s(chance)


def stake_lines(stake: Any, ladders: Ladders = NO_LADDERS) -> list[str]:
    """Each player's rating, chance to win, and what a win and a loss would change, one
    indented line a player; none when nothing is at stake."""
    if not isinstance(stake, dict):
        return []
    lines = []
    for p in stake["players"]:
        shown = _rating_column(ladders, stake["ladder"], p["rating"])
        lines.append(f"  {p['player']} ({word(shown.label)} {shown.text(p['rating'])}): "
                     f"{_percent(p['chance'])} to win; a win {shown.change_text(p['win'])}, "
                     f"a loss {shown.change_text(p['loss'])}.")
    return lines


def _with_stake(line: str, stake: Any, ladders: Ladders) -> str:
    return "\n".join([line, *stake_lines(stake, ladders)])


STATUS = {"claimed": "a win is reported", "disputed": "disputed; an admin will decide it"}


def match_line(m: dict[str, Any], head: str, verb: str = "") -> str:
    """``In match 4: bob vs alice (backgammon, 3 points).`` with its state past playing."""
    state = STATUS.get(m.get("status") or "")
    return (f"{head} {m['match']}{verb}: {m['a']} vs {m['b']} ({m['ladder']}, "
            f"{_length(m['length'])})" + (f", {state}." if state else "."))


def match_summary(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                  viewer: Viewer = NOBODY) -> str:
    """The reply of ``join`` (and the push ``match_started``): the match and its stake."""
    return _with_stake(match_line(data, "Match", " started"), data.get("stake"), ladders)


def result_sentence(data: dict[str, Any]) -> str:
    """How a match ended, in words: ``bob resigned; alice wins match 4 (backgammon, 1
    point).``"""
    winner, loser, how = data["winner"], data.get("loser"), data.get("how")
    match = f"match {data['match']} ({data['ladder']}, {_length(data['length'])})"
    if how == "adjudicate":
        return f"An admin decided {match}: {winner} wins."
    if loser is None:
        return f"{winner} wins {match} ({how})."
    if how == "resign":
        return f"{loser} resigned; {winner} wins {match}."
    if how == "confirm":
        return f"{loser} confirmed {winner}'s win in {match}."
    if how == "claim":
        return f"{loser} left and did not come back in time; {winner} claimed {match} and wins."
    return f"{winner} wins {match} ({how})."


def match_finished(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                   viewer: Viewer = NOBODY) -> str:
    head = result_sentence(data)
    if not data.get("rated", True):
        return head + " Not rated."
    return head + "\n" + changes(data["changes"], data["ladder"], ladders)


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, max(width, 1), subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [""]


def help_listing(commands: Sequence[dict[str, Any]], width: int | None) -> str:
    """Usage, role and summary in columns; on a screen too narrow for the longest lines, the
    usage and the summary wrap within their columns, split where the listing takes the fewest
    lines (the summary keeps at least :data:`HELP_SUMMARY_MIN` columns)."""
    rows = [[c["usage"], c["who"], c["summary"]] for c in commands]
    plain = table(["usage", "who", "what"], rows)
    if width is None or max(len(line) for line in plain.splitlines()) <= width:
        return plain
    who_w = max(len(r[1]) for r in [["who", "who"], *rows])
    longest = max(len(r[0]) for r in [["usage"], *rows])
    widest = max(12, min(longest, width - who_w - 4 - HELP_SUMMARY_MIN))
    best: list[str] = []
    for usage_w in range(12, widest + 1):
        out = _help_lines(rows, usage_w, who_w, max(HELP_SUMMARY_MIN, width - usage_w - who_w - 4))
        if not best or len(out) < len(best):
            best = out
    return "\n".join(best)


def _help_lines(rows: Sequence[Sequence[str]], usage_w: int, who_w: int, what_w: int
                ) -> list[str]:
    out = []
    for usage, who_, what in [["usage", "who", "what"], *rows]:
        left, right = _wrap(usage, usage_w, "  "), _wrap(what, what_w)
        for i in range(max(len(left), len(right))):
            cells = [left[i] if i < len(left) else "", who_ if i == 0 else "",
                     right[i] if i < len(right) else ""]
            out.append(f"{cells[0]:<{usage_w}}  {cells[1]:<{who_w}}  {cells[2]}".rstrip())
    return out


def help_(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
          viewer: Viewer = NOBODY) -> str:
    if "commands" in data:
        return help_listing(data["commands"], viewer.width)
    if viewer.width is None:
        return f"{data['usage']}\n  {data['summary']}\n  For: {data['who']}"
    return "\n".join([*_wrap(data["usage"], viewer.width, "  "),
                      *("  " + line for line in _wrap(data["summary"], viewer.width - 2)),
                      f"  For: {data['who']}"])


def generic(data: Any, ladders: Ladders = NO_LADDERS,
            viewer: Viewer = NOBODY) -> str:
    """A reply the client has no words for (a plugin's command), whatever its shape."""
    return shaped(data)


# ---- replies of the lobby's commands ----------------------------------------------------------


def logged_in(data: dict[str, Any], ladders: Ladders = NO_LADDERS, viewer: Viewer = NOBODY,
              how: str = "Logged in") -> str:
    role = {"admin": " (admin)"}.get(data.get("role") or "", "")
    lines = [f"{how} as {data['player']}{role}."]
    if isinstance(data.get("match"), dict):
        lines.append(_with_stake(match_line(data["match"], "You are in match"),
                                 data["match"].get("stake"), ladders))
    lines += [waiting_line(d) for d in data.get("disputes") or []]
    others = data.get("other_sessions")
    if isinstance(others, int) and others > 0:
        lines.append(f"You have {_count(others, 'other session')} open (other devices or "
                     "browsers); 'logout --others' ends them.")
    if isinstance(data.get("match"), dict) and isinstance(data["match"].get("claim_in"), int):
        lines.append(claim_text(_opponent(data["match"], data["player"]), data["match"]["match"],
                                data["match"]["claim_in"]))
    if isinstance(data.get("while_away"), dict):
        lines.extend(while_away(data["while_away"], data["player"], ladders))
    return "\n".join(lines)


def _opponent(m: Mapping[str, Any], me: str) -> str:
    return str(m["b"] if str(m["a"]).casefold() == me.casefold() else m["a"])


def claim_text(player: str, match: Any, claim_in: int) -> str:
    """A live match's opponent left: when the reader may claim it."""
    when = "now" if claim_in <= 0 else f"in {claim_in} s"
    return f"{player} left match {match}; 'claim {match}' wins it {when} if they do not come back."


def _ended_while_away(m: Mapping[str, Any], me: str) -> str:
    """How one of the reader's matches ended while they were away, said to them."""
    other = _opponent(m, me)
    won = str(m.get("winner") or "").casefold() == me.casefold()
    winner = "you" if won else str(m.get("winner"))
    how = m.get("how")
    if how == "claim":
        return "you claimed it" if won else f"{other} claimed it after you left"
    if how == "resign":
        return f"{other} resigned: you won" if won else "you resigned"
    if how == "confirm":
        return f"{other} confirmed your win" if won else f"you confirmed {other}'s win"
    if how == "adjudicate":
        return f"an admin decided it: {winner} won"
    if how == "void":
        return f"an admin voided it ({m.get('reason') or 'no reason given'}); it no longer counts"
    if how == "abort":
        return "it was aborted, unrated"
    return f"it ended: {winner} won" if m.get("winner") else "it ended"


def while_away(data: Mapping[str, Any], me: str, ladders: Ladders = NO_LADDERS) -> list[str]:
    """The login reply's ``while_away``: how the reader's matches ended while they were away,
    and what each did to their rating."""
    lines = ["While you were away:"]
    for m in data.get("matches") or []:
        line = (f"  Match {m['match']} ({m['ladder']}, {_length(m['length'])}): "
                f"{_ended_while_away(m, me)}.")
        if isinstance(m.get("rating"), dict):
            line += f" Your rating: {change_text(m['rating'], m['ladder'], ladders)}."
        lines.append(line)
    if data.get("more"):
        more = data["more"]
        lines.append(f"  And {more} earlier {'match' if more == 1 else 'matches'}: "
                     f"'history {me}' lists them.")
    return lines


def registered(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
               viewer: Viewer = NOBODY) -> str:
    return f"Welcome, {data['player']}: your account is made and you are logged in."


def resumed(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
            viewer: Viewer = NOBODY) -> str:
    return logged_in(data, ladders, viewer, "Logged in again")


def logged_out(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
               viewer: Viewer = NOBODY) -> str:
    if "ended" in data:  # --all or --others
        ended = _count(data["ended"], "session")
        if data.get("logged_in"):
            return f"Ended your other sessions ({ended}); you stay logged in here."
        return f"Logged out of {data['player']} everywhere ({ended} ended)."
    ended = " This login's session has ended." if data.get("revoked") else ""
    return f"Logged out of {data['player']}.{ended}"


PRESENCE_WORDS = {"offline": "left", "playing": "is playing a match",
                  "ready": "is online, free to play",
                  "not_ready": "is online, not taking invitations"}


def presence(data: dict[str, Any], viewer: Viewer = NOBODY) -> str:
    """The ``presence`` push: who came, went, started or ended a match (not the reader); the
    reader's opponent who left, with when the reader may claim the match."""
    return " ".join(claim_text(e["player"], e.get("match"), e["claim_in"])
                    if isinstance(e.get("claim_in"), int)
                    else f"{e['player']} {PRESENCE_WORDS.get(e['status'], e['status'])}."
                    for e in data["players"] if not viewer.mine(e["player"]))


def watching(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
             viewer: Viewer = NOBODY) -> str:
    if data["watching"]:
        return f"Watching {data['ladder']}: its results and rating changes are shown here."
    return f"No longer watching {data['ladder']}."


def readiness(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
              viewer: Viewer = NOBODY) -> str:
    if data["ready"]:
        return "You take invitations again."
    return "Nobody can invite you now ('ready on' to take invitations again)."


def seeking(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
            viewer: Viewer = NOBODY) -> str:
    """``seek``'s reply: the match looked for; the match starts by itself once found."""
    old = data.get("replaced")
    instead = (f" (instead of {match_kind(old['length'], old['ladder'])})"
               if isinstance(old, dict) else "")
    return (f"Looking for an opponent for {match_kind(data['length'], data['ladder'])} within "
            f"{data['range']} points of your rating{instead}, wider the longer you wait. "
            "The match starts as soon as one is found; 'unseek' stops looking.")


def unseeking(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
              viewer: Viewer = NOBODY) -> str:
    return f"No longer looking for {match_kind(data['length'], data['ladder'])}."


def seeks(data: dict[str, Any], ladders: Ladders = NO_LADDERS, viewer: Viewer = NOBODY) -> str:
    """Who is looking for an opponent: one line a seeker, since when."""
    pool = data["seeks"]
    if not pool:
        return "Nobody is looking for a match."
    lines = ["Looking for a match:"]
    for s in pool:
        rated = s.get("rating")
        shown = "" if rated is None else (
            f", {word(_rating_column(ladders, s['ladder'], rated).label)} "
            f"{_rating_column(ladders, s['ladder'], rated).text(rated)}")
        since = str(s["since"])[:19] + "Z"  # to the second
        lines.append(f"  {'you' if viewer.mine(s['player']) else s['player']}"
                     f"{shown}: {match_kind(s['length'], s['ladder'])} within {s['range']} "
                     f"points, since {clock(since)}")
    return "\n".join(lines)


def stake(data: dict[str, Any], ladders: Ladders = NO_LADDERS, viewer: Viewer = NOBODY) -> str:
    a, b = (p["player"] for p in data["players"])
    return _with_stake(f"At stake in {match_kind(data['length'], data['ladder'])} of {a} "
                       f"against {b}:", data, ladders)


def invited(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
            viewer: Viewer = NOBODY) -> str:
    again = " again (this replaces your earlier invitation)" if data.get("replaced") else ""
    return _with_stake(f"You invited {data['to']}{again} to "
                       f"{match_kind(data['length'], data['ladder'])}"
                       f"{_open_until(data.get('expires_at'))}.", data.get("stake"), ladders)


def invitations(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                viewer: Viewer = NOBODY) -> str:
    if not data["sent"] and not data["received"]:
        return "No invitations, sent or received."
    lines = []
    if data["sent"]:
        lines.append("Invitations you sent:")
        lines += [f"  to {i['to']}: {match_kind(i['length'], i['ladder'])}"
                  f"{_open_until(i.get('expires_at'))}. Type 'uninvite {i['to']}' to withdraw it."
                  for i in data["sent"]]
    else:
        lines.append("You have sent no invitations.")
    if data["received"]:
        lines.append("Invitations you received:")
        for i in data["received"]:
            lines.append(f"  from {i['from']}: {match_kind(i['length'], i['ladder'])}"
                         f"{_open_until(i.get('expires_at'))}. Type 'join {i['from']}' or "
                         f"'decline {i['from']}'.")
            lines += ["  " + line for line in stake_lines(i.get("stake"), ladders)]
    else:
        lines.append("You have received no invitations.")
    return "\n".join(lines)


def uninvited(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
              viewer: Viewer = NOBODY) -> str:
    return f"Your invitation to {data['withdrawn']} is withdrawn."


def declined(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
             viewer: Viewer = NOBODY) -> str:
    return f"You declined {data['declined']}'s invitation."


def _scores(scores: Any) -> str:
    return f" ({scores[0]} to {scores[1]})" if isinstance(scores, list) and len(scores) == 2 \
        else ""


def claimed(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
            viewer: Viewer = NOBODY) -> str:
    return (f"You report a win in match {data['match']}{_scores(data.get('scores'))}; your "
            f"opponent is asked to confirm or dispute it.")


def disputed(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
             viewer: Viewer = NOBODY) -> str:
    return (f"You dispute the reported win in match {data['match']}: an admin will decide it. "
            "You are free to play other matches meanwhile.")


def aborting(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
             viewer: Viewer = NOBODY) -> str:
    if data["status"] == "aborted":
        return f"Match {data['match']} is aborted; it is not rated."
    return (f"You propose to abort match {data['match']}: it ends unrated if your opponent "
            f"agrees (they type 'abort').")


def _game(g: Mapping[str, Any]) -> str:
    return f"{g['side_a']} {_s(g.get('score_a'))}, {g['side_b']} {_s(g.get('score_b'))}"


def event_result(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                 viewer: Viewer = NOBODY) -> str:
    rated = "" if data.get("rated", True) else \
        f" Not rated ({data['unrated']})." if data.get("unrated") else " Not rated."
    head = (f"Recorded in event {data['event']} as match {data['match']}: {_game(data)}.{rated}"
            + new_players(data))
    ladder_ = next((c.get("ladder") for c in data.get("changes") or []), None)
    return "\n".join([head, changes(data["changes"], ladder_, ladders)]) \
        if data.get("changes") else head


def event_import(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                 viewer: Viewer = NOBODY) -> str:
    n = data["imported"]
    matches = [g["match"] for g in data.get("games") or []]
    which = f" (matches {matches[0]} to {matches[-1]})" if len(matches) > 1 else \
        f" (match {matches[0]})" if matches else ""
    return f"Imported {_count(n, 'game')} into event {data['event']}{which}." + new_players(data)


def new_players(data: Mapping[str, Any]) -> str:
    """The names that had never played on the ladder: a newcomer, or a misspelling."""
    new = data.get("new_players") or []
    if not new:
        return ""
    return (f" New on this ladder: {', '.join(new)} (check the spelling: a misspelt name "
            "becomes a new player).")


def player_removed(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                   viewer: Viewer = NOBODY) -> str:
    return f"Removed {data['player']}: the name is free again."


def corrected(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
              viewer: Viewer = NOBODY) -> str:
    """The reply of ``void`` and of ``adjudicate`` of a finished match: the correction and
    every rating the recomputed ladder moved."""
    if data["status"] == "voided":
        head = f"Match {data['match']} ({data['ladder']}) is void: {data['reason']}."
    else:
        head = f"Match {data['match']} ({data['ladder']}) now counts as won by {data['winner']}."
    if not data.get("recomputed"):
        return head + " It was never rated; no rating moved."
    if not data.get("changes"):
        return head + " The ladder was recomputed; no rating moved."
    return "\n".join([head + " The ladder was recomputed:",
                      changes(data["changes"], data["ladder"], ladders)])


def disputes(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
             viewer: Viewer = NOBODY) -> str:
    """The disputed matches an admin has to decide, each with the commands that decide it."""
    if not data["disputes"]:
        return "No disputed matches: nothing waits for a decision."
    lines = ["Disputed matches, waiting for a decision:"]
    for d in data["disputes"]:
        mid = d["match"]
        waited = f" Waiting {_age(d['age'])}." if isinstance(d.get("age"), int) else ""
        lines.append(f"  Match {mid}: {d['a']} vs {d['b']} ({d['ladder']}, "
                     f"{_length(d['length'])}); {d['claimant']} reports a win"
                     f"{_scores(d.get('scores'))}, {d['by']} disputes it.{waited} Type "
                     f"'adjudicate {mid} WINNER' or 'void {mid} REASON'.")
    return "\n".join(lines)


def _age(seconds: int) -> str:
    """How long a dispute has waited: "just now", "12 min", "3 h 5 min", "2 days 1 h"."""
    minutes = seconds // 60
    if minutes < 1:
        return "since just now"
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{_count(days, 'day')} {hours} h" if hours else _count(days, "day")


def adjudicated(data: dict[str, Any], ladders: Ladders = NO_LADDERS,
                viewer: Viewer = NOBODY) -> str:
    if "how" in data:
        return match_finished(data, ladders, viewer)
    return corrected(data, ladders, viewer)


REPLIES: dict[str, Renderer] = {
    "whois": whois, "ladder": ladder, "rating": rating, "history": history, "who": who,
    "ladders": ladders, "events": events, "event show": event, "event close": event,
    "event create": event, "help": help_, "resign": match_finished, "confirm": match_finished,
    "claim": match_finished, "register": registered, "login": logged_in, "resume": resumed,
    "logout": logged_out, "watch": watching, "unwatch": watching, "stake": stake,
    "ready on": readiness, "ready off": readiness,
    "seek": seeking, "unseek": unseeking, "seeks": seeks,
    "invite": invited, "invitations": invitations, "uninvite": uninvited, "join": match_summary,
    "decline": declined, "report win": claimed, "dispute": disputed, "abort": aborting,
    "event result": event_result, "event import": event_import, "disputes": disputes,
    "void": corrected, "player remove": player_removed,
    "adjudicate": adjudicated,
    **talk_lines.REPLIES,
    **ban_lines.REPLIES,
    **evaluation_lines.REPLIES,
}


def render_reply(message: dict[str, Any], ladders: Ladders = NO_LADDERS,
                 viewer: Viewer = NOBODY) -> str:
    """A reply (``ok`` true or false) as text; never raises on odd data. ``ladders``: the
    ladders described so far (a ``ladders`` reply), by name; ``viewer``: who reads it."""
    if not message.get("ok"):
        err = message.get("error") or {}
        again = "" if err.get("code") != "new_player" else \
            " Import it again with --new to add them." if message.get("cmd") == "event import" \
            else " Type it again with --new to add them."
        return f"Error ({err.get('code', '?')}): {err.get('message', '')}{again}"
    cmd = message.get("cmd") or ""
    data = message.get("data")
    try:
        return REPLIES.get(cmd, generic)(data, ladders, viewer)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return generic(data)


# ---- pushes -----------------------------------------------------------------------------------


def _invited(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    who_ = d["from"]
    return _with_stake(f"{who_} invites you to {match_kind(d['length'], d['ladder'])}"
                       f"{_open_until(d.get('expires_at'))}. Type 'join {who_}' or "
                       f"'decline {who_}'.", d.get("stake"), ladders)


def _expired(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    if viewer.mine(d["from"]):
        return f"Your invitation to {d['to']} ({d['ladder']}) has expired."
    if viewer.mine(d["to"]):
        return f"{d['from']}'s invitation ({d['ladder']}) has expired."
    return f"{d['from']}'s invitation to {d['to']} ({d['ladder']}) has expired."


def _rating_changed(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    label = word(_rating_column(ladders, d["ladder"], d["after"]).label)
    return (f"{viewer.whose(d['player'])} {d['ladder']} {label}: "
            f"{change_text(d, d['ladder'], ladders)}{_played(d)}.")


LISTED_MOVES = 5


def _ladder_updated(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    """The best-placed of the players who moved, with their rank and rating now; the rest
    counted (``ladder LADDER`` shows the table)."""
    rows = d["changed"]
    listed = [f"{'you' if viewer.mine(r['player']) else r['player']} "
              f"{_rating_column(ladders, d['ladder'], r['rating']).text(r['rating'])} "
              f"(#{r['rank']})" for r in rows[:LISTED_MOVES]]
    more = len(rows) - len(listed) + int(d.get("more") or 0)
    moved = ", ".join(listed) + (f" and {more} more" if more else "")
    why = f" after event {d['event']}" if d.get("event") is not None else ""
    return (f"Ladder {d['ladder']} updated{why} ({_count(int(d['total']), 'player')})"
            + (f": {moved}." if moved else "."))


def _claim_pushed(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    return (f"{d['by']} reports a win in match {d['match']}{_scores(d.get('scores'))}. "
            f"Type 'confirm {d['match']}' or 'dispute {d['match']}'.")


def _dispute_pushed(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    if viewer.mine(d["by"]):
        return disputed(d)
    if viewer.role == "admin":
        return (f"{d['by']} disputes the reported win in match {d['match']}. Decide it: "
                f"'adjudicate {d['match']} WINNER' or 'void {d['match']} REASON'.")
    return (f"{d['by']} disputes your reported win in match {d['match']}; an admin will decide "
            "it. You are free to play other matches meanwhile.")


def _corrected_pushed(d: dict[str, Any], ladders: Ladders, viewer: Viewer) -> str:
    if d["status"] == "voided":
        return f"Match {d['match']} ({d['ladder']}) was voided by an admin: {d['reason']}."
    return (f"Match {d['match']} ({d['ladder']}) was corrected by an admin: {d['winner']} "
            f"is the winner.")


PUSHES: dict[str, Renderer] = {
    "invited": _invited,
    "invitation_withdrawn": lambda d, ladders, viewer: (
        f"{d['from']} withdrew the invitation to {_article(d['ladder'])} match."),
    "invitation_expired": _expired,
    "declined": lambda d, ladders, viewer: f"{d['by']} declined your invitation.",
    "match_started": match_summary,
    "result_claimed": _claim_pushed,
    "result_disputed": _dispute_pushed,
    "abort_requested": lambda d, ladders, viewer: (
        f"{d['by']} proposes to abort match {d['match']} unrated. Type 'abort' to agree."),
    "match_aborted": lambda d, ladders, viewer: (
        f"Match {d['match']} is aborted: your opponent agreed. It is not rated."),
    "match_finished": match_finished,
    "match_corrected": _corrected_pushed,
    "rating_changed": _rating_changed,
    "ladder_updated": _ladder_updated,
    "presence": lambda d, ladders, viewer: presence(d, viewer),
    "logged_out": lambda d, ladders, viewer: str(d["reason"]),
    "refresh": lambda d, ladders, viewer: (
        "The server missed some of the lobby's updates: type 'ladder', 'matches' or 'who' "
        "again for the current state."),
    "server_shutdown": lambda d, ladders, viewer: (
        f"The server is restarting; reconnecting in {restart_wait(d):g} s."),
    "disconnected": lambda d, ladders, viewer: "Connection lost.",
    "reconnected": lambda d, ladders, viewer: "Connected again.",
    **talk_lines.PUSHES,
    "while_away": lambda d, ladders, viewer: "\n".join(while_away(d, str(d.get("player")), ladders)),
}


def render_push(message: dict[str, Any], ladders: Ladders = NO_LADDERS,
                viewer: Viewer = NOBODY) -> str:
    event_name = message.get("event", "?")
    d = message.get("data") or {}
    try:
        if event_name == "hello":
            return f"Connected to {d['server']} {d['version']} (protocol {d['protocol']})."
        if event_name in PUSHES:
            lead = "" if event_name in talk_lines.SPOKEN else "** "
            return wrapped(lead + PUSHES[event_name](d, ladders, viewer), viewer.width)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        pass
    return wrapped(f"** {event_name}: {generic(d)}", viewer.width)


def wrapped(text: str, width: int | None) -> str:
    """Each line wider than the screen broken at spaces, its continuation indented under
    its text (after ``** ``, or two more than the line's own indent); a word wider than the
    screen stays whole."""
    if width is None:
        return text
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        indent = " " * (3 if line.startswith("** ") else lead + 2)
        out += textwrap.wrap(line, max(width, len(indent) + 1), subsequent_indent=indent,
                             break_long_words=False, break_on_hyphens=False)
    return "\n".join(out)
