"""What the lobby holds in memory about the people and the matches it serves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

AWAY_AFTER = 600.0  # seconds without a message before a player shows as away
LIVE = ("playing", "claimed", "disputed")  # the statuses of a match still being played
# the statuses that hold its players: a disputed match waits for an admin, and its players
# are free to play others meanwhile
HOLDING = ("playing", "claimed")


@dataclass
class Player:
    id: int
    name: str
    role: str = "player"
    password_hash: str | None = None
    last_login: str | None = None
    dropped: int = 0
    key: str = field(init=False, compare=False, repr=False)  # the name casefolded, read often

    def __post_init__(self) -> None:
        self.key = self.name.casefold()


@dataclass(eq=False)
class Session:
    """One connection. ``send`` queues a message; ``close`` ends the connection."""

    send: Callable[[dict[str, Any]], None]
    close: Callable[[int, str], None]
    # For fan-outs: queue the message for the connection's writer instead of writing it now,
    # so that thousands of sessions each get their messages in turn, not frame by frame.
    queue: Callable[[dict[str, Any]], None] | None = None
    address: str = "?"
    player: Player | None = None
    watching: set[str] = field(default_factory=set)
    last_seen: float = field(default_factory=time.monotonic)
    closed: bool = False
    token_hash: str | None = None  # the session token this connection logged in with
    changes_seen: int = 0  # the account's latest account_changes row when this login was made
    ready: bool = True  # takes invitations ('ready off': nobody can invite this login)
    logged_in_at: float = 0.0  # time.time() of the login: the newer of two on two nodes stays


@dataclass
class LiveMatch:
    id: int
    ladder: str
    length: int | None
    a: str
    b: str
    status: str = "playing"
    claimed_by: str | None = None
    claim_scores: tuple[int, int] | None = None
    abort_by: str | None = None
    disputed_at: str | None = None  # when the claim was disputed (UTC, ISO 8601)
    busy: bool = False
    away_since: dict[str, float] = field(default_factory=dict)

    def opponent(self, name: str) -> str:
        return self.b if name == self.a else self.a

    def side_of(self, name: str) -> str:
        return "a" if name == self.a else "b"

    def summary(self) -> dict[str, Any]:
        return {"match": self.id, "ladder": self.ladder,
                "length": "unlimited" if self.length is None else self.length,
                "a": self.a, "b": self.b, "status": self.status}

    def note(self) -> dict[str, Any]:
        """What the other nodes of the database keep of it (:mod:`server.lobby.sharing`)."""
        return {"id": self.id, "ladder": self.ladder, "length": self.length, "a": self.a,
                "b": self.b, "status": self.status, "claimed_by": self.claimed_by,
                "claim_scores": self.claim_scores, "abort_by": self.abort_by,
                "disputed_at": self.disputed_at}

    def follow(self, note: dict[str, Any]) -> None:
        """Take another node's change of this match (:meth:`note`)."""
        self.status, self.claimed_by = note["status"], note["claimed_by"]
        scores = note["claim_scores"]
        self.claim_scores = None if scores is None else (int(scores[0]), int(scores[1]))
        self.abort_by = note["abort_by"]
        self.disputed_at = note.get("disputed_at")


@dataclass(eq=False)
class Invitation:
    inviter: str
    invitee: str
    ladder: str
    length: int | None
    expires_at: str | None = None  # None: it stands until answered
    expired: bool = False  # kept, so that answering it says it has expired
    timer: asyncio.TimerHandle | None = None
    here: bool = True  # made on this node (which tells the players when it expires)
    # it has a row in the database (made while another node beat, or another node's): the
    # row, not this node's copy, decides its answer
    stored: bool = False

    def note(self) -> dict[str, Any]:
        """What the other nodes of the database keep of it (:mod:`server.lobby.sharing`)."""
        return {"inviter": self.inviter, "invitee": self.invitee, "ladder": self.ladder,
                "length": self.length, "expires_at": self.expires_at}

    @property
    def shown_length(self) -> int | str:
        return "unlimited" if self.length is None else self.length


@dataclass
class Elsewhere:
    """A player online on another node of the same database, as that node last said."""

    name: str
    node: str
    status: str  # "ready" or "playing"
