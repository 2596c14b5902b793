"""Talk as a FIBS session shows it: ``alice tells: hi``, ``alice says: gl``, ``alice shouts:
anyone?``, ``You tell alice: hi``. What people said is printed as they said it (the server
refuses control characters in it), after the speaker's name, never as a system message."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Line = Callable[[Any, Any, Any], str]
"""(data, ladders, viewer) → a line, as :data:`clients.render.Renderer`."""


def _when(stamp: Any) -> str:
    """``2026-12-03T17:05:00Z`` as ``2026-12-03 17:05 UTC``."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if isinstance(stamp, str) else str(stamp)


def shout_line(s: Mapping[str, Any]) -> str:
    return f"{s['from']} shouts: {s['text']}"


def _shouts(d: Mapping[str, Any], ladders: Any, viewer: Any) -> str:
    shouts = d["shouts"]
    if not shouts:
        return "Nobody has shouted yet."
    return "\n".join(f"[{s['at'][11:16]}] {shout_line(s)}" for s in shouts)


def _block(d: Mapping[str, Any], ladders: Any, viewer: Any) -> str:
    if "blocking" in d:
        names = d["blocking"]
        return f"You block {', '.join(names)}." if names else "You block nobody."
    return (f"You block {d['player']}: their tells, says and invitations no longer reach you "
            "(they are not told).")


def _mute(d: Mapping[str, Any], ladders: Any, viewer: Any) -> str:
    if not d["muted"]:
        return f"{d['player']} may tell, say and shout again."
    until = f"until {_when(d['until'])}" if d.get("until") else "until you unmute them"
    return f"{d['player']} is muted {until}."


def _muted_push(d: Mapping[str, Any], ladders: Any, viewer: Any) -> str:
    if not d["muted"]:
        return f"{d['by']} unmuted you: you may tell, say and shout again."
    until = f"until {_when(d['until'])}" if d.get("until") else "until an admin unmutes you"
    return f"{d['by']} muted you {until}: you cannot tell, say or shout meanwhile."


REPLIES: dict[str, Line] = {
    "tell": lambda d, ladders, viewer: f"You tell {d['to']}: {d['text']}",
    "say": lambda d, ladders, viewer: f"You say to {d['to']}: {d['text']}",
    "shout": lambda d, ladders, viewer: f"You shout: {d['text']}",
    "shouts": _shouts,
    "block": _block,
    "unblock": lambda d, ladders, viewer: f"You hear {d['player']} again.",
    "mute": _mute,
    "unmute": _mute,
}

SPOKEN = frozenset({"told", "said", "shouted"})
"""The pushes that carry a person's words: shown without the ``** `` of the lobby's news."""

PUSHES: dict[str, Line] = {
    "told": lambda d, ladders, viewer: f"{d['from']} tells: {d['text']}",
    "said": lambda d, ladders, viewer: f"{d['from']} says: {d['text']}",
    "shouted": lambda d, ladders, viewer: shout_line(d),
    "muted": _muted_push,
}
