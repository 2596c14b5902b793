"""How fast invitations may be sent. Each one pushes ``invited`` to its target (the web page
plays a tone, the terminal rings its bell), so without a limit one account can ring another
without end; replacing a standing invitation costs nothing either.

Three token buckets, each full to begin with and refilled evenly over a minute: one per
inviter (over all targets), one per inviter and target, one per target (over all
inviters, so that many accounts cannot take turns). An invitation takes a token from all
three or from none. The buckets live in memory, per server process: with several servers on
one database each counts the invitations it is sent, as the per-connection message limit
does; a restart forgets them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from server.limits import TokenBucket

# Buckets kept per table before the full ones (no different from a new one) are swept.
MAX_BUCKETS = 100_000


@dataclass(frozen=True, slots=True)
class Refusal:
    """Which limit stopped an invitation (``sent``, ``pair`` or ``received``), its size a
    minute, and the seconds until a token is back."""

    limit: str
    per_minute: int
    wait: float


class _Table:
    """``per_minute`` tokens a minute per key (0: no limit)."""

    def __init__(self, name: str, per_minute: int) -> None:
        self.name = name
        self.per_minute = per_minute
        self.buckets: dict[object, TokenBucket] = {}

    def take(self, key: object, now: float) -> float:
        """0 when a token was taken for ``key``, else the seconds until one is back."""
        if self.per_minute <= 0:
            return 0.0
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= MAX_BUCKETS:
                self._sweep(now)
            bucket = self.buckets[key] = TokenBucket(self.per_minute / 60.0, self.per_minute,
                                                     stamp=now)
        if bucket.take(now):
            return 0.0
        return (1.0 - bucket.tokens) / bucket.rate

    def give_back(self, key: object) -> None:
        bucket = self.buckets.get(key)
        if bucket is not None:
            bucket.tokens = min(bucket.capacity, bucket.tokens + 1.0)

    def _sweep(self, now: float) -> None:
        self.buckets = {k: b for k, b in self.buckets.items()
                        if b.tokens + (now - b.stamp) * b.rate < b.capacity}
        if len(self.buckets) >= MAX_BUCKETS:  # still full: keep the most recently used half
            newest = sorted(self.buckets.items(), key=lambda kv: kv[1].stamp)[MAX_BUCKETS // 2:]
            self.buckets = dict(newest)


class InvitationLimit:
    """The three limits of the module's docstring; keys are case-folded player names."""

    def __init__(self, sent: int, pair: int, received: int) -> None:
        self.sent = _Table("sent", sent)
        self.pair = _Table("pair", pair)
        self.received = _Table("received", received)

    def take(self, inviter: str, invitee: str, now: float | None = None) -> Refusal | None:
        """Count an invitation from ``inviter`` to ``invitee``, or say why it may not go now
        (and count nothing)."""
        now = time.monotonic() if now is None else now
        taken: list[tuple[_Table, object]] = []
        for table, key in ((self.sent, inviter), (self.pair, (inviter, invitee)),
                           (self.received, invitee)):
            wait = table.take(key, now)
            if wait > 0:
                for done, done_key in taken:
                    done.give_back(done_key)
                return Refusal(table.name, table.per_minute, wait)
            taken.append((table, key))
        return None
