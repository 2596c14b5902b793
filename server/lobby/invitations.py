"""Invitations to live matches: who invited whom, until it is answered, withdrawn or expires.

One invitation stands per inviter and invitee (a second replaces the first).
An invitation that expires is kept, marked, until the pair's next move or
either signs out, so that answering it says it has expired rather than that
there is none; listings leave it out.
"""

from __future__ import annotations

import asyncio
import calendar
import time
from collections.abc import Callable
from typing import Any

from server.api.clock import moment
from server.lobby.state import Invitation


class Invitations:
    """Every standing invitation, by invitee and by inviter (keys: names case-folded)."""

    def __init__(self, timeout: float, on_expire: Callable[[Invitation], None]) -> None:
        self.timeout = timeout  # seconds; 0: invitations stand until answered
        self.on_expire = on_expire
        self.received: dict[str, dict[str, Invitation]] = {}  # invitee → inviter → it
        self.sent: dict[str, dict[str, Invitation]] = {}  # inviter → invitee → it

    def stamp(self, invitation: Invitation) -> None:
        """Its expiry: ``timeout`` from now (none when invitations stand until answered)."""
        if self.timeout > 0:
            invitation.expires_at = moment(self.timeout)[0]

    def add(self, invitation: Invitation) -> bool:
        """Record ``invitation``: one made here expires ``timeout`` from now (stamped now
        unless it was a moment ago), another node's when its stamp says; whether it replaced
        a standing one."""
        invitee, inviter = invitation.invitee.casefold(), invitation.inviter.casefold()
        old = self.take(invitee, inviter)
        if invitation.here and invitation.expires_at is None:
            self.stamp(invitation)
        if invitation.expires_at is not None:
            # here: to the fraction of a second the stamp leaves out
            left = self.timeout if invitation.here else max(0.0, _left(invitation.expires_at))
            invitation.timer = asyncio.get_running_loop().call_later(left, self._expire,
                                                                     invitation)
        self.received.setdefault(invitee, {})[inviter] = invitation
        self.sent.setdefault(inviter, {})[invitee] = invitation
        return old is not None and not old.expired

    def follow(self, op: list[Any]) -> None:
        """Another node's change (:meth:`~server.lobby.lobby.Lobby.invitations_changed`)."""
        match op:
            case ["add", dict(fields)]:
                self.add(Invitation(fields["inviter"], fields["invitee"], fields["ladder"],
                                    fields["length"], fields["expires_at"], here=False,
                                    stored=True))
            case ["take", str(invitee), str(inviter)]:
                self.take(invitee, inviter)
            case ["drop_sent", str(key)]:
                self.drop_sent(key)
            case ["drop_received", str(key)]:
                self.drop_received(key)
            case ["drop_player", str(key)]:
                self.drop_player(key)
            case _:
                raise ValueError(f"unknown invitation change {op!r}")

    def get(self, invitee: str, inviter: str) -> Invitation | None:
        """The invitation (expired or not) from ``inviter`` to ``invitee``."""
        return self.received.get(invitee, {}).get(inviter)

    def take(self, invitee: str, inviter: str) -> Invitation | None:
        """Remove and return the invitation from ``inviter`` to ``invitee`` (expired or not)."""
        invitation = self.received.get(invitee, {}).pop(inviter, None)
        if invitation is None:
            return None
        self._forget(self.received, invitee)
        self.sent.get(inviter, {}).pop(invitee, None)
        self._forget(self.sent, inviter)
        if invitation.timer is not None:
            invitation.timer.cancel()
            invitation.timer = None
        return invitation

    def restore(self, invitation: Invitation) -> None:
        """Put back an invitation taken by an answer that could not be saved, with the expiry
        it had (unless it has expired meanwhile, or a newer one stands in its place)."""
        invitee, inviter = invitation.invitee.casefold(), invitation.inviter.casefold()
        if invitation.expired or self.get(invitee, inviter) is not None:
            return
        if invitation.expires_at is not None:
            left = _left(invitation.expires_at)
            if left <= 0:
                return
            invitation.timer = asyncio.get_running_loop().call_later(left, self._expire,
                                                                     invitation)
        self.received.setdefault(invitee, {})[inviter] = invitation
        self.sent.setdefault(inviter, {})[invitee] = invitation

    def standing_sent(self, inviter: str) -> list[Invitation]:
        return [i for i in self.sent.get(inviter, {}).values() if not i.expired]

    def standing_received(self, invitee: str) -> list[Invitation]:
        return [i for i in self.received.get(invitee, {}).values() if not i.expired]

    def drop_sent(self, inviter: str) -> None:
        for invitee in list(self.sent.get(inviter, {})):
            self.take(invitee, inviter)

    def drop_received(self, invitee: str) -> None:
        for inviter in list(self.received.get(invitee, {})):
            self.take(invitee, inviter)

    def drop_player(self, key: str) -> None:
        """Everything to and from a player who signed out: it lapses without a word."""
        self.drop_sent(key)
        self.drop_received(key)

    def _expire(self, invitation: Invitation) -> None:
        invitation.timer = None
        invitation.expired = True
        self.on_expire(invitation)

    @staticmethod
    def _forget(index: dict[str, dict[str, Invitation]], key: str) -> None:
        if not index.get(key, True):
            del index[key]


def _left(expires_at: str) -> float:
    """Seconds until ``expires_at`` (negative once past)."""
    return calendar.timegm(time.strptime(expires_at, "%Y-%m-%dT%H:%M:%SZ")) - time.time()
