"""Abuse limits: a per-connection token bucket and a login-failure throttle.

Checked libraries first: ``limiter``, ``aiolimiter`` and ``throttlekit`` make
the caller *wait* for capacity, and ``limits`` offers window strategies behind
a storage layer; a connection here needs a refusal, not a wait, and thousands
of buckets must cost almost nothing, so the bucket is these few lines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class TokenBucket:
    """``rate`` tokens a second up to ``capacity``; each message takes one."""

    rate: float
    capacity: float
    tokens: float = -1.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = self.capacity

    def take(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class _Failures:
    count: int = 0
    last: float = 0.0


class LoginThrottle:
    """Slows logins down after failures, per account and per address.

    The first ``free`` failures cost nothing; after that each attempt must
    wait ``base · 2^(failures − free)`` seconds (at most ``cap``) since the
    last failure. A success clears the account's and the address's record;
    records older than ``forget`` seconds are dropped.
    """

    def __init__(self, free: int = 5, base: float = 1.0, cap: float = 300.0,
                 forget: float = 900.0) -> None:
        self.free, self.base, self.cap, self.forget = free, base, cap, forget
        self._records: dict[str, _Failures] = {}

    def _wait(self, key: str, now: float) -> float:
        rec = self._records.get(key)
        if rec is None:
            return 0.0
        if now - rec.last > self.forget:
            del self._records[key]
            return 0.0
        if rec.count < self.free:
            return 0.0
        delay = min(self.cap, self.base * 2.0 ** (rec.count - self.free))
        return max(0.0, rec.last + delay - now)

    def wait_for(self, account: str, address: str, now: float | None = None) -> float:
        """Seconds until a login for ``account`` from ``address`` may be tried (0: now)."""
        now = time.monotonic() if now is None else now
        return max(self._wait("a:" + account, now), self._wait("i:" + address, now))

    def failed(self, account: str, address: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for key in ("a:" + account, "i:" + address):
            rec = self._records.setdefault(key, _Failures())
            rec.count += 1
            rec.last = now
        if len(self._records) > 100_000:
            self._records = {k: r for k, r in self._records.items() if now - r.last <= self.forget}

    def succeeded(self, account: str, address: str) -> None:
        self._records.pop("a:" + account, None)
        self._records.pop("i:" + address, None)
