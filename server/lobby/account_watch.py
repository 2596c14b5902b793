"""Following the accounts other processes make and change: a new password, a new role, a
ban or a logout everywhere (the account_changes table), made by any process sharing the
database, ends the account's open login here within a second (a ban closes its
connection); an account made elsewhere (another node's ``register``, ``matchlobby user
add``) is known here as soon, so it can be invited.

The change's process cannot reach this server's connections; the database is what every
server shares, so each one reads the rows appended since the last it saw, every
:data:`POLL_INTERVAL` seconds on SQLite (only when ``PRAGMA data_version`` says another
connection has committed since: a few microseconds on the event loop's thread), and on
PostgreSQL when the change's commit notifies the nodes (:meth:`AccountWatch.nudge`), with a
poll every :data:`NOTIFIED_POLL_INTERVAL` seconds as a safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from server.lobby.state import Player
from server.store import account_changes as stored
from server.store import players as stored_players

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby

log = logging.getLogger(__name__)
POLL_INTERVAL = 0.25  # seconds
NOTIFIED_POLL_INTERVAL = 5.0
"""On PostgreSQL every change notifies the nodes at its commit (:meth:`AccountWatch.nudge`);
the poll is then only a safety net for a notification lost with the listening connection."""


class AccountWatch:
    """The task that applies other processes' account changes to this server's logins."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby
        self.last = 0  # the latest change applied (or made before this server started)
        self.applied: dict[str, tuple[int, str]] = {}  # account → its latest change applied
        self._version: int | None = None
        self.top_player = 0  # the newest account known here
        self._task: asyncio.Task[None] | None = None
        self._polling = asyncio.Lock()  # a poll asked by the push feed waits for this task's
        self.interval = POLL_INTERVAL
        self._nudged = asyncio.Event()
        self._stopping = False

    async def start(self, last: int | None = None) -> None:
        """Watch from change ``last``: the newest one read before the players were (a change
        committed between the two is then applied, not counted as applied); ``None``: the
        newest one now."""
        self.last = await stored.latest(self.lobby.db) if last is None else last
        self.top_player = max((p.id for p in self.lobby.players.values()), default=0)
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name="account-watch")

    def nudge(self) -> None:
        """Another process committed an account change (PostgreSQL's notification): poll now."""
        self._nudged.set()

    async def stop(self) -> None:
        """End the watch. ``_stopping`` ends its loop even when the cancellation is lost: on
        Python 3.11 ``asyncio.wait_for`` returns instead of raising when the awaited nudge
        arrives just as the task is cancelled, and ``stop`` then waited for ever."""
        task, self._task = self._task, None
        if task is not None:
            self._stopping = True
            self._nudged.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        failing = False
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudged.wait(), self.interval)
            self._nudged.clear()
            if self._stopping:
                return
            try:
                await self.poll()
            except Exception as e:  # the database is away or failing: try again, say it once
                if not failing:
                    log.warning("cannot read account changes (%s); trying again", e)
                failing = True
            else:
                if failing:
                    log.info("reading account changes again")
                failing = False

    async def poll(self) -> int:
        """Learn the accounts made and apply the changes committed since the last poll; how
        many changes there were."""
        async with self._polling:
            return await self._poll()

    async def _poll(self) -> int:
        version = self.lobby.db.data_version()  # read first: a commit after it shows next time
        if version is not None and version == self._version:
            return 0
        made = await stored_players.since(self.lobby.db, self.top_player)
        rows = await stored.since(self.lobby.db, self.last)
        self._version = version
        for row in made:
            self.known(row)
        for row in rows:
            self.apply(row)
        return len(rows)

    def known(self, row: Any) -> None:
        """An account made by another process (or by this one: then it is known already)."""
        lobby = self.lobby
        player = Player(row["id"], row["name"], row["role"], row["password_hash"],
                        row["last_login"], row["dropped"])
        lobby.players.setdefault(player.key, player)
        self.top_player = max(self.top_player, player.id)

    def apply(self, row: Any) -> None:
        """One change: the account as stored now, and its login here ended unless it was made
        after the change (a login with the new password)."""
        change, kind, name, role, password_hash = row[0], row[2], row[3], row[4], row[5]
        lobby = self.lobby
        player = lobby.players.get(name.casefold())
        if player is not None:
            player.role, player.password_hash = role, password_hash
        self.last = max(self.last, change)
        if kind not in stored.ENDS_LOGINS:
            return
        session = lobby.online.get(name.casefold())
        if session is not None and session.changes_seen < change:
            if kind == stored.BAN:
                lobby.banned(session, row[6], row[7])
            else:
                lobby.end_login(session, kind)
        self.applied[name.casefold()] = (change, kind)

    def missed(self, account: str, seen: int) -> str | None:
        """The kind of a change to ``account`` applied here after ``seen``, if one was: a login
        made before that change, and signed in only now, must not go ahead."""
        change = self.applied.get(account)
        return change[1] if change is not None and change[0] > seen else None
