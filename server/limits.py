"""Abuse limits: a per-connection token bucket, the login throttle and the registration limit.

Checked libraries first: ``limiter``, ``aiolimiter`` and ``throttlekit`` make
the caller *wait* for capacity, and ``limits`` offers window strategies behind
a storage layer; a connection here needs a refusal, not a wait, and thousands
of buckets must cost almost nothing, so the bucket is these few lines.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
# Records kept per table before the stale ones are swept (then the oldest, if still too many):
# an address or an account name a record, about 200 bytes each.
MAX_RECORDS = 100_000


def client_key(address: str) -> str:
    """Whom a per-address limit counts: the address, or for IPv6 its /64 network.

    An IPv6 host usually holds a whole /64 (and picks new addresses in it at will), so
    counting single IPv6 addresses would give each guesser 2^64 allowances.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return address


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


@dataclass(slots=True)
class _Failures:
    count: int = 0
    last: float = 0.0


class Backoff(Generic[K]):
    """Failures counted per key: the first ``free`` cost nothing; after that the key must wait
    ``base · 2^(failures − free)`` seconds (at most ``cap``) since its last failure. A key
    without a failure for ``forget`` seconds starts afresh."""

    def __init__(self, free: int, base: float, cap: float, forget: float) -> None:
        self.free, self.base, self.cap, self.forget = free, base, cap, forget
        self._records: dict[K, _Failures] = {}

    def __len__(self) -> int:
        return len(self._records)

    def count(self, key: K) -> int:
        rec = self._records.get(key)
        return 0 if rec is None else rec.count

    def wait(self, key: K, now: float) -> float:
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

    def add(self, key: K, now: float) -> None:
        rec = self._records.get(key)
        if rec is None:
            if len(self._records) >= MAX_RECORDS:
                self._sweep(now)
            rec = self._records[key] = _Failures()
        rec.count += 1
        rec.last = now

    def remove(self, key: K) -> None:
        """One failure fewer (an attempt counted in advance turned out not to be one)."""
        rec = self._records.get(key)
        if rec is not None:
            rec.count -= 1
            if rec.count <= 0:
                del self._records[key]

    def clear(self, key: K) -> None:
        self._records.pop(key, None)

    def _sweep(self, now: float) -> None:
        self._records = {k: r for k, r in self._records.items() if now - r.last <= self.forget}
        if len(self._records) >= MAX_RECORDS:  # still full of live records: keep the newest half
            newest = sorted(self._records.items(), key=lambda kv: kv[1].last)[MAX_RECORDS // 2:]
            self._records = dict(newest)


class Throttled(Exception):
    """A login refused unchecked; ``wait`` seconds until it may be tried."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"wait {wait:.1f} s")
        self.wait = wait


@dataclass(frozen=True, slots=True)
class Attempt:
    """A login counted before its password is checked (see :meth:`LoginThrottle.begin`)."""

    account: str
    address: str
    trusted: bool


class LoginThrottle:
    """Slows down password guessing without letting anyone lock an account's owner out.

    Three records of failed logins, each with :class:`Backoff` (free failures, then waits
    doubling up to ``cap`` seconds):

    - per account and address (``per_pair`` free): a guesser slows down itself;
    - per address, over every account (``per_address`` free): one address spraying a
      password over many accounts; a success does not reset it;
    - per account, over every address (``per_account`` free): a guesser spread over many
      addresses.

    An address that has logged into an account (or registered it) is *trusted* for that
    account for ``remember`` seconds: only its own record for that account applies to it,
    and its failures do not count in the other two. So however many guesses others make,
    the owner logs in from an address they used before; from a new address, only a
    guesser with more than ``per_account`` failures from many addresses slows them down.
    This is OWASP's "device cookie" scheme, with the address in place of the cookie.

    An attempt is counted when it begins, before its password is hashed (:meth:`begin`),
    so concurrent guesses are limited exactly; a success takes its count back.
    Everything is in memory: a restart forgets it.
    """

    def __init__(self, per_pair: int = 5, per_address: int = 20, per_account: int = 100,
                 base: float = 1.0, cap: float = 300.0, forget: float = 900.0,
                 remember: float = 30 * 86400.0) -> None:
        self.pairs: Backoff[tuple[str, str]] = Backoff(per_pair, base, cap, forget)
        self.addresses: Backoff[str] = Backoff(per_address, base, cap, forget)
        self.accounts: Backoff[str] = Backoff(per_account, base, cap, forget)
        self.remember = remember
        self._trusted: dict[tuple[str, str], float] = {}

    def trusted(self, account: str, address: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        since = self._trusted.get((account, address))
        if since is None:
            return False
        if now - since > self.remember:
            del self._trusted[(account, address)]
            return False
        return True

    def trust(self, account: str, address: str, now: float | None = None) -> None:
        """``address`` has proved it knows ``account``'s password (a login or registration)."""
        now = time.monotonic() if now is None else now
        if len(self._trusted) >= MAX_RECORDS and (account, address) not in self._trusted:
            self._trusted = {k: t for k, t in self._trusted.items() if now - t <= self.remember}
            if len(self._trusted) >= MAX_RECORDS:
                newest = sorted(self._trusted.items(), key=lambda kv: kv[1])[MAX_RECORDS // 2:]
                self._trusted = dict(newest)
        self._trusted.pop((account, address), None)  # re-inserted: the dict stays oldest first
        self._trusted[(account, address)] = now

    def wait_for(self, account: str, address: str, now: float | None = None) -> float:
        """Seconds until a login for ``account`` from ``address`` may be tried (0: now)."""
        now = time.monotonic() if now is None else now
        wait = self.pairs.wait((account, address), now)
        if not self.trusted(account, address, now):
            wait = max(wait, self.addresses.wait(address, now), self.accounts.wait(account, now))
        return wait

    def begin(self, account: str, address: str, now: float | None = None) -> Attempt:
        """Count a login as failed before its password is checked, or raise :class:`Throttled`.

        Nothing may be awaited between this and the check of its limits, which is why it
        is one call: concurrent attempts each see the ones before them.
        """
        now = time.monotonic() if now is None else now
        wait = self.wait_for(account, address, now)
        if wait > 0:
            raise Throttled(wait)
        attempt = Attempt(account, address, self.trusted(account, address, now))
        self.pairs.add((account, address), now)
        if not attempt.trusted:
            self.addresses.add(address, now)
            self.accounts.add(account, now)
        return attempt

    def succeeded(self, attempt: Attempt) -> None:
        """The password was right: the pair starts afresh, the other records take it back."""
        self.pairs.clear((attempt.account, attempt.address))
        if not attempt.trusted:
            self.addresses.remove(attempt.address)
            self.accounts.remove(attempt.account)
        self.trust(attempt.account, attempt.address)

    def cancelled(self, attempt: Attempt) -> None:
        """The password was never checked (the server was busy, or failed): not an attempt."""
        self.pairs.remove((attempt.account, attempt.address))
        if not attempt.trusted:
            self.addresses.remove(attempt.address)
            self.accounts.remove(attempt.account)


class RegistrationLimit:
    """At most ``per_hour`` new accounts an hour from one address (a token bucket each, full
    to begin with); 0 means no limit. Each registration hashes a password, which is what
    a flood of them costs the server."""

    def __init__(self, per_hour: float) -> None:
        self.per_hour = per_hour
        self._buckets: dict[str, TokenBucket] = {}

    def take(self, address: str, now: float | None = None) -> float:
        """0 when a registration from ``address`` may go ahead (and is counted), else the
        seconds until it may."""
        if self.per_hour <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        bucket = self._buckets.get(address)
        if bucket is None:
            if len(self._buckets) >= MAX_RECORDS:
                self._sweep(now)
            bucket = self._buckets[address] = TokenBucket(self.per_hour / 3600.0, self.per_hour,
                                                          stamp=now)
        if bucket.take(now):
            return 0.0
        return (1.0 - bucket.tokens) / bucket.rate

    def give_back(self, address: str) -> None:
        """A registration counted by :meth:`take` that hashed nothing after all."""
        bucket = self._buckets.get(address)
        if bucket is not None:
            bucket.tokens = min(bucket.capacity, bucket.tokens + 1.0)

    def _sweep(self, now: float) -> None:
        """Forget the buckets that have filled up again: a new one is the same."""
        self._buckets = {a: b for a, b in self._buckets.items()
                         if b.tokens + (now - b.stamp) * b.rate < b.capacity}
        if len(self._buckets) >= MAX_RECORDS:  # still full: keep the most recently used half
            newest = sorted(self._buckets.items(), key=lambda kv: kv[1].stamp)[MAX_RECORDS // 2:]
            self._buckets = dict(newest)


class ReadBudget:
    """What one address may have the server read, in units: ``per_second`` of them a second,
    up to ``burst`` saved up, shared by all its connections (:func:`client_key`); 0 a second
    means no limit.

    A read's cost (:func:`read_cost`) is known once it has run, so it is paid then: the
    budget may go into debt by that one read, and the address's reads are refused until the
    debt is paid back. So a stranger's flood of costly reads costs the server at most
    ``per_second`` units a second, however many connections it spreads them over.
    """

    def __init__(self, per_second: float, burst: float) -> None:
        self.per_second = per_second
        self.burst = max(burst, 1.0)
        self._buckets: dict[str, TokenBucket] = {}

    def wait(self, address: str, now: float | None = None) -> float:
        """Seconds until ``address`` may read again (0: now)."""
        if self.per_second <= 0:
            return 0.0
        bucket = self._buckets.get(client_key(address))
        if bucket is None:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens = min(bucket.capacity, bucket.tokens + (now - bucket.stamp) * bucket.rate)
        return 0.0 if tokens > 0 else (1e-3 - tokens) / bucket.rate

    def pay(self, address: str, cost: float, now: float | None = None) -> None:
        """``address`` had ``cost`` units read."""
        if self.per_second <= 0:
            return
        now = time.monotonic() if now is None else now
        key = client_key(address)
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_RECORDS:
                self._sweep(now)
            bucket = self._buckets[key] = TokenBucket(self.per_second, self.burst, stamp=now)
        bucket.tokens = min(bucket.capacity, bucket.tokens + (now - bucket.stamp) * bucket.rate)
        bucket.stamp = now
        bucket.tokens -= cost

    def _sweep(self, now: float) -> None:
        """Forget the buckets that have filled up again: a new one is the same."""
        self._buckets = {a: b for a, b in self._buckets.items()
                         if b.tokens + (now - b.stamp) * b.rate < b.capacity}
        if len(self._buckets) >= MAX_RECORDS:  # still full: keep the most recently used half
            newest = sorted(self._buckets.items(), key=lambda kv: kv[1].stamp)[MAX_RECORDS // 2:]
            self._buckets = dict(newest)


class LoginRate:
    """Successful logins and resumes: at most ``per_account`` a minute for one account and
    ``per_address`` a minute from one address (token buckets, full to begin with; 0: no limit).

    A correct password or token costs the server too: each login writes to the database
    and tells every ``who`` listener. Only successes are taken (failures have
    :class:`LoginThrottle`), so nobody can spend an account's allowance without its password
    or a token. :meth:`wait` is checked before a password is hashed, :meth:`take` once it
    was right.
    """

    def __init__(self, per_account: float, per_address: float) -> None:
        self.accounts = _Buckets(per_account)
        self.addresses = _Buckets(per_address)

    def wait(self, account: str, address: str, now: float | None = None) -> float:
        """Seconds until a login of ``account`` from ``address`` may succeed (0: now)."""
        now = time.monotonic() if now is None else now
        return max(self.accounts.wait(account, now), self.addresses.wait(address, now))

    def take(self, account: str, address: str, now: float | None = None) -> float:
        """Count a successful login (0), or the seconds to wait when either allowance is spent
        (then nothing is counted)."""
        now = time.monotonic() if now is None else now
        wait = self.wait(account, address, now)
        if wait > 0:
            return wait
        self.accounts.take(account, now)
        self.addresses.take(address, now)
        return 0.0

    def give_back(self, account: str, address: str) -> None:
        """A login counted by :meth:`take` that did not happen after all (its write failed)."""
        self.accounts.give_back(account)
        self.addresses.give_back(address)


class _Buckets:
    """A token bucket per key, ``per_minute`` tokens a minute up to ``per_minute``."""

    def __init__(self, per_minute: float) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, TokenBucket] = {}

    def _bucket(self, key: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_RECORDS:
                self._sweep(now)
            bucket = self._buckets[key] = TokenBucket(self.per_minute / 60.0, self.per_minute,
                                                      stamp=now)
        return bucket

    def wait(self, key: str, now: float) -> float:
        if self.per_minute <= 0 or key not in self._buckets:
            return 0.0
        bucket = self._buckets[key]
        tokens = min(bucket.capacity, bucket.tokens + (now - bucket.stamp) * bucket.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / bucket.rate

    def take(self, key: str, now: float) -> None:
        if self.per_minute > 0:
            self._bucket(key, now).take(now)

    def give_back(self, key: str) -> None:
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.tokens = min(bucket.capacity, bucket.tokens + 1.0)

    def _sweep(self, now: float) -> None:
        """Forget the buckets that have filled up again: a new one is the same."""
        self._buckets = {k: b for k, b in self._buckets.items()
                         if b.tokens + (now - b.stamp) * b.rate < b.capacity}
        if len(self._buckets) >= MAX_RECORDS:
            newest = sorted(self._buckets.items(), key=lambda kv: kv[1].stamp)[MAX_RECORDS // 2:]
            self._buckets = dict(newest)
