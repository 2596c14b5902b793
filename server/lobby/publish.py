"""Pushes: who hears what, sent after the reply of the command that caused them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from server.api import Data
from server.lobby.audience import Audience
from server.lobby.state import Session
from server.protocol import push

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby

Message = dict[str, Any] | Callable[[], dict[str, Any]]
"""A push, or a function making it (called once, after the reply has gone out)."""

FAN_OUT_DIRECT = 32


def fan_out(targets: Collection[Session], message: dict[str, Any]) -> None:
    """Send to each open session; beyond a few dozen, through their queues (see Session.queue).

    Measured with 10,000 watchers of an event close: writing each frame to every
    socket in turn got the last watcher its ladder_updated ~1.1x as late as
    websockets.broadcast; queued, each watcher's writer sends it all its frames.
    """
    bulk = len(targets) > FAN_OUT_DIRECT
    for s in targets:
        if not s.closed:
            (s.queue if bulk and s.queue is not None else s.send)(message)


class Pushes:
    """The pushes one command causes, held until its reply has been sent, each addressed to
    an :class:`~server.lobby.audience.Audience` and resolved to connections when it is sent."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby
        self.held: list[tuple[Audience, Message, Session | None]] = []
        self.then: list[Callable[[], None]] = []

    def add(self, audience: Audience, message: Message, skip: Session | None = None) -> None:
        """Hold ``message`` for ``audience``; ``skip``: a connection that has heard it (the
        reply to the command told the acting player)."""
        if audience:
            self.held.append((audience, message, skip))

    def after(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once the reply and these pushes have gone (a presence change)."""
        self.then.append(fn)

    def send(self) -> None:
        held, self.held = self.held, []
        for audience, message, skip in held:
            self.lobby.publish(audience, message, skip)
        then, self.then = self.then, []
        for fn in then:
            fn()


class Publisher:
    """The plugin API's publisher for one command: to players and a ladder's watchers."""

    def __init__(self, pushes: Pushes) -> None:
        self.pushes = pushes

    def push(self, event: str, data: Data, *, players: Iterable[str] = (),
             watchers: str | None = None) -> None:
        audience = Audience(tuple(players), watchers)
        if callable(data):
            make = data
            self.pushes.add(audience, lambda: push(event, make()))
        else:
            self.pushes.add(audience, push(event, data))
