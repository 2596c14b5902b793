"""One DEBUG line a command answered, on the logger ``matchlobby.commands``: who, what, how
long, and the error's code if it was refused. Never its arguments or its reply: they hold
passwords, session tokens and what players write."""

from __future__ import annotations

import logging
from collections.abc import Container
from typing import Any

from server.lobby.state import Session

log = logging.getLogger("matchlobby.commands")


def answered(session: Session, command: str, message: dict[str, Any], took: float) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    duration = round(took, 6)
    failure = message.get("error")
    code = failure.get("code") if isinstance(failure, dict) else None
    player = session.player.name if session.player is not None else None
    log.debug("%s from %s: %s in %.1f ms", command, player or session.address, code or "ok",
              duration * 1000,
              extra={"player": player, "command": command, "duration": duration, "code": code})


def unreadable(session: Session, command: object, code: str, known: Container[str]) -> None:
    """A frame refused before it ran: not a command, or a read past its address's budget (its
    command named only if ``known``: a name is what a client sent)."""
    if log.isEnabledFor(logging.DEBUG):
        command = command if isinstance(command, str) and command in known else None
        player = session.player.name if session.player is not None else None
        log.debug("a frame from %s refused: %s", player or session.address, code,
                  extra={"player": player, "command": command, "code": code})
