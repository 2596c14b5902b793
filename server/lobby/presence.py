"""Who comes and goes, and who starts or ends a live match, told in batches.

Every login, logout and match start or end changes a player's status; the
connections that listed ``who`` (and, of a login or logout, a live match's
opponent) are told with the push ``presence``, which lists each player that changed since the last one with
their status now. A connection gets at most one such push every ``interval``
seconds, whatever the number of changes: one connection resuming two accounts in
turn as fast as it may used to cost two pushes to every listener per resume (at
1,000 listeners the server spent its whole time on them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from server.lobby.drops import claim_in
from server.lobby.publish import fan_out
from server.lobby.state import Session
from server.protocol import push

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby

OFFLINE = "offline"
NOT_READY = "not_ready"  # online, not taking invitations ('ready off')


class Presence:
    """The listeners of presence and the changes waiting for the next push."""

    def __init__(self, lobby: Lobby, interval: float) -> None:
        self.lobby = lobby
        self.interval = interval
        self.listeners: set[Session] = set()
        self.pending: dict[str, str] = {}  # the players changed since the last push, by key
        self.comings: set[str] = set()  # those of them who logged in or out
        self._due: asyncio.Handle | None = None
        self._last = float("-inf")  # when the last push went (the loop's clock)
        self.pushes = 0  # presence pushes sent (each to one connection)

    def listen(self, session: Session) -> None:
        self.listeners.add(session)

    def forget(self, session: Session) -> None:
        self.listeners.discard(session)

    def changed(self, names: Iterable[str], coming: bool = False, here: bool = True) -> None:
        """These players' status changed (``coming``: they logged in or out; ``here``: on this
        node, not told by another): they are in the next push."""
        names = list(names)
        for name in names:
            self.pending[name.casefold()] = name
            if coming:
                self.comings.add(name.casefold())
        sharing = self.lobby.sharing
        if here and sharing is not None and sharing.alive:
            # the other nodes hear it now (their listeners at their own pace): a claim there
            # against a player who left here must not wait for this node's next push
            lobby = self.lobby
            sharing.presence([
                (name, self.status(name),
                 lobby.online[key].logged_in_at if key in lobby.online else 0.0)
                for name in names if (key := name.casefold()) not in lobby.elsewhere])
        if self._due is None and self.pending:
            loop = asyncio.get_running_loop()
            wait = self._last + self.interval - loop.time()
            # after the reply of the command that caused it, at the earliest
            self._due = loop.call_later(wait, self.flush) if wait > 0 else \
                loop.call_soon(self.flush)

    def status(self, name: str) -> str:
        lobby = self.lobby
        key = name.casefold()
        if key not in lobby.online:
            there = lobby.elsewhere.get(key)
            return OFFLINE if there is None else there.status
        if name in lobby.match_of:
            return "playing"
        return "ready" if lobby.online[key].ready else NOT_READY

    def flush(self) -> None:
        """One push to each listener: every change since the last, but their own."""
        self._due = None
        self._last = asyncio.get_running_loop().time()
        pending, self.pending = self.pending, {}
        comings, self.comings = self.comings, set()
        if not pending:
            return
        entries = {key: {"player": name, "status": self.status(name)}
                   for key, name in pending.items()}
        opponents = self._opponents(entries, comings)
        own: dict[str, list[Session]] = {}  # listeners whose own account changed
        everything: list[Session] = []
        for s in self.listeners:
            if s.closed or s in opponents:
                continue
            if s.player is not None and s.player.key in entries:
                own.setdefault(s.player.key, []).append(s)
            else:
                everything.append(s)
        sent = self._send(everything, list(entries.values()))
        for key, sessions in own.items():
            sent += self._send(sessions, [e for k, e in entries.items() if k != key])
        for s, theirs in opponents.items():
            if s in self.listeners:
                mine = s.player.key if s.player is not None else None
                sent += self._send([s], [theirs.get(k, e) for k, e in entries.items()
                                         if k != mine])
            else:
                sent += self._send([s], list(theirs.values()))
        self.pushes += sent

    def _opponents(self, entries: dict[str, dict[str, Any]], comings: set[str]
                   ) -> dict[Session, dict[str, dict[str, Any]]]:
        """A live match's opponent may claim it after a drop: told of comings and goings even
        without listing `who`, and, while the player is away, when the claim opens (``match``
        and ``claim_in`` in the entry about them, to the opponent only)."""
        lobby = self.lobby
        told: dict[Session, dict[str, dict[str, Any]]] = {}
        for key, entry in entries.items():
            player = lobby.players.get(key)
            m = None if player is None else lobby.matches.get(lobby.match_of.get(player.name, 0))
            if player is None or m is None:
                continue
            opponent = lobby.session_of(m.opponent(player.name))
            if opponent is None or opponent.closed:
                continue
            drop = claim_in(lobby, player.name) if entry["status"] == OFFLINE else None
            if drop is not None:
                told.setdefault(opponent, {})[key] = {**entry, "match": drop[0],
                                                      "claim_in": drop[1]}
            elif key in comings and opponent not in self.listeners:
                told.setdefault(opponent, {})[key] = entry
        return told

    @staticmethod
    def _send(targets: list[Session], entries: list[dict[str, Any]]) -> int:
        if not targets or not entries:
            return 0
        fan_out(targets, push("presence", {"players": entries}))
        return len(targets)
