"""What tab completion offers in the terminal client, from the server's own descriptions.

The usages ``help`` lists say which argument comes where (``invite NAME LADDER [LENGTH]``),
so a word is completed as the command expects it: a player online for NAME, a ladder for
LADDER. ``help`` is the one command read by its name: what follows it is a command.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from clients.models import PresenceChange

PLAYER_ARGS = frozenset({"NAME", "WINNER", "SIDE_A", "SIDE_B"})


def placeholders(command: str, usage: str) -> list[str]:
    """The arguments of a usage in order, without the command's words and the flags:
    ``invite NAME LADDER [LENGTH]`` gives NAME, LADDER, LENGTH."""
    out: list[str] = []
    in_flag = False
    for token in usage.split()[len(command.split()):]:
        if token.startswith(("--", "[--")):
            in_flag = not token.endswith("]")
            continue
        if in_flag:
            in_flag = not token.endswith("]")
            continue
        out.append(token.strip("[]"))
    return out


class Names:
    """What tab completion offers: the commands (by their usage), the ladders and the players
    online, kept current from pushes."""

    def __init__(self, ladders: Callable[[], Iterable[str]] = lambda: (),
                 local: Collection[str] = ()) -> None:
        self.usages: dict[str, str] = {}
        self.players: set[str] = set()
        self.ladders = ladders
        self.local = frozenset(local)  # the client's own words (quit)

    @property
    def commands(self) -> list[str]:
        return list(self.usages)

    def learn(self, help_listing: dict[str, Any]) -> None:
        self.usages = {c["command"]: c["usage"] for c in help_listing["commands"]}

    def update(self, push: dict[str, Any]) -> None:
        if push.get("event") != "presence":
            return
        for change in PresenceChange.list_from(push.get("data") or {}):
            if change.online:
                self.players.add(change.player)
            else:
                self.players.discard(change.player)

    def _words(self, group: str | None) -> list[str]:
        """The first words of the commands, or the sub-commands of ``group``."""
        if group is None:
            return sorted({c.split()[0] for c in self.usages} | self.local)
        return sorted(c.split()[1] for c in self.usages if c.startswith(group + " "))

    def _groups(self) -> set[str]:
        return {c.split()[0] for c in self.usages if " " in c}

    def _command(self, done: list[str]) -> str | None:
        for n in (2, 1):
            name = " ".join(done[:n]).lower()
            if len(done) >= n and name in self.usages:
                return name
        return None

    def offers(self, done: list[str]) -> list[str]:
        """What may come after the words ``done``: a command, a sub-command, or the argument
        the command's usage names there (a player, a ladder, a command for ``help``)."""
        if not done:
            return self._words(None)
        first = done[0].lower()
        if len(done) == 1 and first in self._groups():
            return self._words(first)
        if first == "help":
            if len(done) == 1:
                return self._words(None)
            if len(done) == 2 and done[1].lower() in self._groups():
                return self._words(done[1].lower())
            return []
        command = self._command(done)
        if command is None:
            return []
        args = [w for w in done[len(command.split()):] if not w.startswith("--")]
        wanted = placeholders(command, self.usages[command])
        if len(args) >= len(wanted):
            return []
        kind = wanted[len(args)]
        if kind in PLAYER_ARGS:
            return sorted(self.players)
        if kind == "LADDER":
            return sorted(self.ladders())
        if kind == "STATUS":
            return ["closed", "open"]
        if kind == "LENGTH":
            return ["unlimited"]
        return []
