"""Password guessing and hashing floods against a real server: the limits hold, the owner gets in.

Every address here is a real one: Linux routes all of 127.0.0.0/8 to the loopback, so a
client bound to 127.0.0.2 is, to the server, another machine than one bound to 127.0.0.3.
How many password hashes the server computed is read from its own counters
(``lobby.hasher``: ``computed``, ``peak``), which count each hash as it starts.

- concurrent guesses: 40 wrong passwords for one account from one address, all sent at
  once, get exactly ``login_free_failures`` hashes; the rest are ``rate_limited`` unhashed;
- spraying: guesses on many accounts from one address, with a successful login to the
  guesser's own account between them, stop at ``login_address_failures``;
- lockout: guesses on an account slow the guesser, not the owner on another address;
  a guesser spread over many addresses slows new addresses, not the owner's known one;
- a registration flood from one address stops at ``registrations_per_hour``;
- hashing: never more than ``password_hash_slots`` at once, and at most
  ``password_hash_queue`` waiting; the others are refused, unhashed;
- timing: a login with an unknown name takes as long as one with a wrong password.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from testkit.constants import ADMIN, ADMIN_PASSWORD, LIVENESS, PASSWORD
from testkit.db import sql
from testkit.figures import group
from testkit.server_thread import ServerThread
from websockets.asyncio.client import ClientConnection, connect

from server.config import Limits, PasswordHashing

FIGURES = group("login and hashing figures")
# scrypt at 1/8 of the default cost (16 MiB, some tens of ms): long enough for concurrent
# requests to overlap and for the hash to dominate a login's time.
SLOW_HASHING = PasswordHashing(n=2**14)
ATTACKER = "127.0.0.2"
OWNER = "127.0.0.3"
OTHER = "127.0.0.4"
SETUP = "127.0.0.9"


@pytest.fixture
async def serve(db_path: Path) -> AsyncIterator[Callable[..., ServerThread]]:
    started: list[ServerThread] = []

    def start(limits: Limits, password: PasswordHashing | None = None) -> ServerThread:
        server = (ServerThread(db_path, limits) if password is None
                  else ServerThread(db_path, limits, password=password)).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            await server.astop()


async def client(server: ServerThread, address: str) -> ClientConnection:
    """A connection from ``address``, past the ``hello``."""
    ws = await connect(server.url, max_size=None, open_timeout=10, local_addr=(address, 0))
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    return ws


async def ask(ws: ClientConnection, cmd: str, timeout: float = LIVENESS, **args: Any) -> str:
    """``cmd``'s outcome: ``ok`` or the error code."""
    await ws.send(json.dumps({"id": 1, "cmd": cmd, "args": args}))
    return await outcome(ws, timeout)


async def outcome(ws: ClientConnection, timeout: float = LIVENESS) -> str:
    async with asyncio.timeout(timeout):
        while True:
            msg = json.loads(await ws.recv())
            if "event" not in msg:
                return "ok" if msg["ok"] else str(msg["error"]["code"])


async def register(server: ServerThread, name: str, address: str = SETUP) -> None:
    ws = await client(server, address)
    assert await ask(ws, "register", name=name, password=PASSWORD) == "ok"
    await ws.close()


async def hashing(server: ServerThread) -> tuple[int, int]:
    """The server's own count of password hashes computed since it started, and the most
    that ran at once."""
    async def read() -> tuple[int, int]:
        assert server.server is not None
        hasher = server.server.lobby.hasher
        return hasher.computed, hasher.peak
    return await server.acall(read())


async def at_once(sockets: list[ClientConnection], frames: list[dict[str, Any]],
                  timeout: float = 10.0) -> list[str]:
    """Send each socket its frame at the same moment; the outcomes, in order."""
    await asyncio.gather(*(ws.send(json.dumps(f)) for ws, f in zip(sockets, frames, strict=True)))
    return list(await asyncio.gather(*(outcome(ws, timeout) for ws in sockets)))


def login_frame(name: str, password: str) -> dict[str, Any]:
    return {"cmd": "login", "args": {"name": name, "password": password}}


# ---- concurrent guesses -------------------------------------------------------------------


async def test_concurrent_guesses_are_checked_exactly_as_often_as_allowed(
        serve: Callable[..., ServerThread]) -> None:
    free, guesses = 5, 40
    server = serve(Limits(login_free_failures=free))
    await register(server, "victim")
    sockets = [await client(server, ATTACKER) for _ in range(guesses)]
    outcomes = await at_once(sockets, [login_frame("victim", f"guess-{i}") for i in range(guesses)])
    counts = Counter(outcomes)
    assert counts == {"forbidden": free, "rate_limited": guesses - free}, counts
    hashed = (await hashing(server))[0] - 1  # the victim's registration hashed once
    assert hashed == free, hashed
    # the owner, from their own address, is not held up by any of it
    owner = await client(server, OWNER)
    assert await ask(owner, "login", name="victim", password=PASSWORD) == "ok"
    for ws in [*sockets, owner]:
        await ws.close()
    FIGURES[f"{guesses} concurrent wrong guesses, one account, one address"] = (
        f"{counts['forbidden']} checked (forbidden), {counts['rate_limited']} rate_limited "
        f"unhashed; hashes computed: {hashed}; the owner from another address logged in")


# ---- spraying -----------------------------------------------------------------------------


async def test_spraying_from_one_address_stops_despite_logins_to_its_own_account(
        serve: Callable[..., ServerThread]) -> None:
    limits = Limits()  # 5 per account and address, 20 per address
    server = serve(limits)
    victims = [f"victim{i}" for i in range(6)]
    for name in victims:
        await register(server, name)
    sprayer = await client(server, ATTACKER)
    assert await ask(sprayer, "register", name="sprayer", password=PASSWORD) == "ok"
    guesses: list[str] = []
    own: list[str] = []
    for name in victims:
        guesses += [await ask(sprayer, "login", name=name, password=f"spring-{i}") for i in range(4)]
        own.append(await ask(sprayer, "login", name="sprayer", password=PASSWORD))
    allowed = limits.login_address_failures
    assert guesses == ["forbidden"] * allowed + ["rate_limited"] * (len(guesses) - allowed), guesses
    assert own == ["ok"] * len(victims), own  # its own account: it proved it knows the password
    hashed = (await hashing(server))[0] - (len(victims) + 1)  # less the registrations
    assert hashed == allowed + len(victims), hashed
    # each victim still logs in from elsewhere
    elsewhere = await client(server, OTHER)
    for name in victims:
        assert await ask(elsewhere, "login", name=name, password=PASSWORD) == "ok"
    for ws in (sprayer, elsewhere):
        await ws.close()
    FIGURES["spraying: 4 guesses on each of 6 accounts, own login between"] = (
        f"{guesses.count('forbidden')} of 24 checked, then rate_limited; own logins all ok; "
        f"hashes computed: {hashed}; every victim logs in from another address")


# ---- lockout ------------------------------------------------------------------------------


async def test_guesses_slow_the_guesser_not_the_owner(serve: Callable[..., ServerThread]) -> None:
    free = 5
    server = serve(Limits(login_free_failures=free))
    owner = await client(server, OWNER)  # the owner's usual address
    assert await ask(owner, "login", name=ADMIN, password=ADMIN_PASSWORD) == "ok"
    await owner.close()
    attacker = await client(server, ATTACKER)
    outcomes = [await ask(attacker, "login", name=ADMIN, password=f"guess-{i}") for i in range(free + 10)]
    assert outcomes == ["forbidden"] * free + ["rate_limited"] * 10, outcomes
    # the guessing address is slowed down, even with the right password ...
    assert await ask(attacker, "login", name=ADMIN, password=ADMIN_PASSWORD) == "rate_limited"
    # ... the owner is not: from their usual address, and from a new one
    waits = []
    for address in (OWNER, OTHER):
        ws = await client(server, address)
        started = time.monotonic()
        assert await ask(ws, "login", name=ADMIN, password=ADMIN_PASSWORD) == "ok"
        waits.append(time.monotonic() - started)
        await ws.close()
    await attacker.close()
    FIGURES[f"lockout: {free + 10} wrong guesses on the admin from one address"] = (
        f"{free} forbidden, then rate_limited (the right password too) for that address; the "
        f"admin logged in from its usual address in {waits[0] * 1000:.0f} ms and from a new "
        f"one in {waits[1] * 1000:.0f} ms")


async def test_a_guesser_on_many_addresses_slows_new_addresses_not_the_owners(
        serve: Callable[..., ServerThread]) -> None:
    per_account = 10
    server = serve(Limits(login_account_failures=per_account))
    owner = await client(server, OWNER)
    assert await ask(owner, "login", name=ADMIN, password=ADMIN_PASSWORD) == "ok"
    await owner.close()
    outcomes = []
    for host in range(1, 5):  # 4 addresses, 3 guesses each: under the 5 per address
        ws = await client(server, f"127.0.1.{host}")
        outcomes += [await ask(ws, "login", name=ADMIN, password=f"guess-{i}") for i in range(3)]
        await ws.close()
    assert outcomes == ["forbidden"] * per_account + ["rate_limited"] * 2, outcomes
    newcomer = await client(server, OTHER)  # an address that never logged in as the admin
    assert await ask(newcomer, "login", name=ADMIN, password=ADMIN_PASSWORD) == "rate_limited"
    owner = await client(server, OWNER)
    assert await ask(owner, "login", name=ADMIN, password=ADMIN_PASSWORD) == "ok"
    for ws in (newcomer, owner):
        await ws.close()
    FIGURES[f"distributed guessing: 12 guesses from 4 addresses (account limit {per_account})"] = (
        f"{per_account} checked, then rate_limited for every address that never logged into the "
        f"account (the right password too); the owner's usual address logs in at once")


# ---- registrations ------------------------------------------------------------------------


async def test_a_registration_flood_from_one_address_is_refused(
        serve: Callable[..., ServerThread], db_path: Path) -> None:
    per_hour, conns, each = 5, 6, 5
    server = serve(Limits(registrations_per_hour=per_hour))
    sockets = [await client(server, ATTACKER) for _ in range(conns)]

    async def flood(ws: ClientConnection, c: int) -> list[str]:
        got = []
        for i in range(each):
            got.append(await ask(ws, "register", name=f"bot{c}x{i}", password=PASSWORD))
            if got[-1] == "ok":
                assert await ask(ws, "logout") == "ok"
        return got

    outcomes = Counter(o for got in await asyncio.gather(*(flood(ws, c) for c, ws in enumerate(sockets)))
                       for o in got)
    assert outcomes == {"ok": per_hour, "rate_limited": conns * each - per_hour}, outcomes
    hashed = (await hashing(server))[0]
    assert hashed == per_hour, hashed
    assert sql(db_path, "SELECT count(*) FROM players WHERE name LIKE 'bot%'") == [(per_hour,)]
    other = await client(server, OTHER)  # another address registers as usual
    assert await ask(other, "register", name="newcomer", password=PASSWORD) == "ok"
    for ws in [*sockets, other]:
        await ws.close()
    FIGURES[f"registration flood ({per_hour} an hour per address)"] = (
        f"{conns} connections alternating register/logout, {conns * each} tries: "
        f"{outcomes['ok']} accounts made, {outcomes['rate_limited']} rate_limited unhashed; "
        f"hashes computed: {hashed}; another address registers")


# ---- concurrent hashes --------------------------------------------------------------------


async def test_hashes_run_a_few_at_once_and_few_wait(serve: Callable[..., ServerThread]) -> None:
    slots, queue, addresses = 2, 4, 24
    server = serve(Limits(password_hash_slots=slots, password_hash_queue=queue,
                          registrations_per_hour=0), password=SLOW_HASHING)
    sockets = [await client(server, f"127.0.2.{i + 1}") for i in range(addresses)]
    outcomes = await at_once(sockets, [login_frame(f"nobody{i}", "wrong") for i in range(addresses)],
                             timeout=30)
    counts = Counter(outcomes)
    assert set(counts) <= {"forbidden", "rate_limited"}, counts
    assert counts["rate_limited"] >= 1, counts  # more came at once than run and wait
    hashed, peak = await hashing(server)
    assert hashed == counts["forbidden"] >= slots + queue, (hashed, counts)
    assert peak <= slots, peak
    # one address sending many at once is served in turn, not refused: it never has more
    # than one hash running or waiting
    same = [await client(server, OTHER) for _ in range(8)]
    mine = await at_once(same, [login_frame(f"nobody{i}", "wrong") for i in range(8)], timeout=30)
    assert mine == ["forbidden"] * 8, mine
    hashed_after, peak_after = await hashing(server)
    assert (hashed_after, peak_after <= slots) == (hashed + 8, True), (hashed_after, peak_after)
    for ws in [*sockets, *same]:
        await ws.close()
    FIGURES[f"hashing ({slots} at once, {queue} waiting), {addresses} logins from as many addresses"] = (
        f"{counts['forbidden']} hashed, {counts['rate_limited']} refused (busy) unhashed; "
        f"at most {peak} hashes at once; 8 at once from one address: all answered in turn")


# ---- timing -------------------------------------------------------------------------------


async def test_an_unknown_name_takes_as_long_as_a_wrong_password(
        serve: Callable[..., ServerThread]) -> None:
    rounds = 15
    lifted = 1_000_000
    server = serve(Limits(login_free_failures=lifted, login_address_failures=lifted,
                          login_account_failures=lifted), password=SLOW_HASHING)
    await register(server, "known")  # its hash at the server's cost
    ws = await client(server, ATTACKER)
    times: dict[str, list[float]] = {"unknown": [], "wrong": []}
    for i in range(rounds):  # interleaved, so that any drift affects both alike
        for kind, name in (("unknown", f"ghost{i}"), ("wrong", "known")):
            started = time.perf_counter()
            assert await ask(ws, "login", name=name, password=f"guess-{i}") == "forbidden"
            times[kind].append(time.perf_counter() - started)
    await ws.close()
    unknown, wrong = statistics.median(times["unknown"]), statistics.median(times["wrong"])
    ratio = unknown / wrong
    assert 0.5 < ratio < 2.0, (unknown, wrong)
    FIGURES["login time, unknown name / wrong password (median of 15, n=2^14)"] = (
        f"{unknown * 1000:.1f} ms / {wrong * 1000:.1f} ms = {ratio:.2f}")
