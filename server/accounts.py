"""Password hashing with scrypt (OWASP password-storage parameters by default).

:class:`PasswordHasher` is where the server computes every hash: it bounds how
many run at once, since each takes ``128 · N · r`` bytes (128 MiB at the
default cost) for as long as it runs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from typing import TypeVar

from server.config import PasswordHashing

MIN_PASSWORD = 8
OWASP_COST = PasswordHashing()
A = TypeVar("A")
R = TypeVar("R")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=256 * n * r + 1024 * 1024, dklen=32)


def hash_password(password: str, cost: PasswordHashing = OWASP_COST) -> str:
    """A self-describing ``scrypt$N$r$p$salt$hash`` string with a fresh 16-byte salt."""
    salt = os.urandom(16)
    digest = _scrypt(password, salt, cost.n, cost.r, cost.p)
    return f"scrypt${cost.n}${cost.r}${cost.p}${_b64(salt)}${_b64(digest)}"


def dummy_hash(cost: PasswordHashing = OWASP_COST) -> str:
    """A stored hash in the same format and at the same cost that no password matches
    (its digest is random): checking against it takes as long as against a real one."""
    return f"scrypt${cost.n}${cost.r}${cost.p}${_b64(os.urandom(16))}${_b64(os.urandom(32))}"


def verify_password(password: str, stored: str | None) -> bool:
    """Constant-time check against a stored hash; accounts without one never match."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


class HashBusy(Exception):
    """Too many password hashes are waiting for a slot; the request was not carried out."""


class PasswordHasher:
    """Every password hash the server computes, in a worker thread, at a bounded cost.

    - At most ``slots`` hashes run at once (memory: ``slots`` × 128 MiB at the default cost).
    - One address has at most one hash running or waiting for a slot; its others wait
      their turn behind it, so one address (64 connections) cannot crowd others out.
    - At most ``queue`` hashes wait for a slot (one per address); beyond that a request is
      refused with :class:`HashBusy` rather than left to wait ever longer (0: no limit).
    - A login for an account that does not exist, or has no password, is checked against
      :func:`dummy_hash` at the configured cost, so it takes as long as a wrong password.

    ``computed``, ``running`` and ``peak`` count the hashes computed, running now and
    running at once at most: what the server's hashing has cost.
    """

    def __init__(self, cost: PasswordHashing = OWASP_COST, slots: int = 2, queue: int = 64
                 ) -> None:
        self.cost = cost
        self.queue = queue
        self._slots = asyncio.Semaphore(max(1, slots))
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}  # address → its lock, users
        self._waiting = 0
        self._dummy = dummy_hash(cost)
        self.computed = 0
        self.running = 0
        self.peak = 0

    async def hash(self, password: str, address: str) -> str:
        return await self._run(address, hash_password, password, self.cost)

    async def verify(self, password: str, stored: str | None, address: str) -> bool:
        return await self._run(address, verify_password, password, stored or self._dummy)

    async def _run(self, address: str, fn: Callable[[str, A], R], password: str, arg: A) -> R:
        lock, users = self._turns.get(address) or (asyncio.Lock(), 0)
        self._turns[address] = (lock, users + 1)
        try:
            async with lock:
                return await self._in_slot(fn, password, arg)
        finally:
            lock, users = self._turns[address]
            if users <= 1:
                del self._turns[address]
            else:
                self._turns[address] = (lock, users - 1)

    async def _in_slot(self, fn: Callable[[str, A], R], password: str, arg: A) -> R:
        if self.queue and self._waiting >= self.queue and self._slots.locked():
            raise HashBusy
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            self.running += 1
            self.computed += 1
            self.peak = max(self.peak, self.running)
            return await asyncio.to_thread(fn, password, arg)
        finally:
            self.running -= 1
            self._slots.release()
