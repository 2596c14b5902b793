"""One request being answered: what a command's handler is given instead of globals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from server.api import CommandError
from server.lobby.audience import Audience
from server.lobby.publish import Message, Publisher, Pushes
from server.lobby.requests import RequestKey, remember
from server.lobby.state import Player, Session
from server.store.handle import WriteTx, transact

if TYPE_CHECKING:
    from server.lobby.lobby import Effects, Lobby

T = TypeVar("T")

LobbyError = CommandError
"""A refused command: a stable ``code`` and a sentence for people (the plugin API's own)."""


def fail(code: str, message: str) -> LobbyError:
    return LobbyError(code, message)


@dataclass(eq=False)
class Call:
    """A command's request: who sent it and with what, and where its pushes and stored reply
    go. Handlers read and change the lobby through it; nothing they do is global."""

    lobby: Lobby
    session: Session
    args: dict[str, Any]
    key: RequestKey | None = None
    pushes: Pushes = field(init=False)
    read: int = 0  # rows read beyond those in the reply (the asker's read budget pays for them)

    def __post_init__(self) -> None:
        self.pushes = Pushes(self.lobby)

    @property
    def me(self) -> Player:
        if self.session.player is None:
            raise fail("not_logged_in", "Log in first.")
        return self.session.player

    def charge(self, rows: int) -> None:
        """This request read ``rows`` rows that its reply does not hold (a sum over many)."""
        self.read += max(0, rows)

    def push(self, audience: Audience, message: Message, skip_me: bool = False) -> None:
        """Send ``message`` to ``audience`` after this command's reply (``skip_me``: not to
        this connection, which the reply told)."""
        self.pushes.add(audience, message, self.session if skip_me else None)

    def tell_status(self, *names: str) -> None:
        """These players started or ended a live match: the sessions that listed ``who`` are
        told after the reply (``presence``), so a list on screen stays true without asking
        again."""
        lobby = self.lobby
        online = [name for name in names if lobby.session_of(name) is not None]
        if online:
            self.pushes.after(lambda: lobby.presence.changed(online))

    @property
    def publisher(self) -> Publisher:
        return Publisher(self.pushes)

    async def write(self, job: Callable[[WriteTx], Awaitable[T]]) -> T:
        """Run ``job`` in a write transaction; returns once it has committed. While other
        nodes beat, the commit reserves the place of this command's pushes among theirs."""
        lobby = self.lobby
        sharing = lobby.sharing
        if sharing is None or not sharing.reserving():
            return await transact(lobby.db, job)
        rated = False

        async def run(tx: WriteTx) -> T:
            nonlocal rated
            result = await job(tx)
            rated = lobby.plugins_touched  # by this job (the writer runs one at a time)
            return result

        done = await transact(lobby.db, run, reserve=True)
        sharing.took(rated)
        return done

    async def remember(self, tx: WriteTx, data: Any) -> None:
        """Store the reply with the result (in ``tx``), so a retry of this request gets it."""
        if self.key is not None:
            await remember(self.lobby.requests, tx, self.key, data)

    def committed(self, effects: Effects, bulk: bool = False) -> None:
        """The transaction holding ``effects`` committed: the plugins publish and push."""
        self.lobby.committed(effects, self.publisher, bulk)
