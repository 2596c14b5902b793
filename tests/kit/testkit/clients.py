"""The test's side of a conversation with a server: a client that keeps its replies, a match
started and played, a refusal expected, a round trip that settles the pushes, a client that
has given up, a request held in flight, a ``ladder_updated`` checked against the ladder."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any

from clients import LobbyClient, LobbyError
from clients.lobby_client import Disconnected, Push
from ratings_plugin.plugin import CHANGED_ROWS
from testkit.constants import LIVENESS, PASSWORD

REQUEST_TIMEOUT = 10.0


class RecordingClient(LobbyClient):
    """A :class:`LobbyClient` that keeps every reply it was handed (``ok`` or not)."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.replies: list[dict[str, Any]] = []

    async def request(self, cmd: str, args: dict[str, Any] | None = None,
                      timeout: float = REQUEST_TIMEOUT, retry: bool = False,
                      request_id: str | None = None) -> dict[str, Any]:
        reply = await super().request(cmd, args, timeout, retry=retry, request_id=request_id)
        self.replies.append(reply)
        return reply

    async def send_line(self, line: str, timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        reply = await super().send_line(line, timeout)
        self.replies.append(reply)
        return reply

    @property
    def name(self) -> str:
        return name_of(self)


def name_of(client: LobbyClient) -> str:
    """The account ``client`` is logged in as."""
    assert client.credentials is not None, "not logged in"
    return client.credentials[0]


async def registered(url: str, *names: str, password: str = PASSWORD) -> list[LobbyClient]:
    """New accounts ``names``, each logged in on its own connection to the server at ``url``."""
    out = []
    for name in names:
        client = LobbyClient(url, reconnect=False)
        await client.connect()
        await client.register(name, password)
        out.append(client)
    return out


async def start_match(a: LobbyClient, b: LobbyClient, length: int | str = 1,
                      ladder: str = "backgammon") -> int:
    """``a`` invites ``b``, ``b`` joins; returns the match id."""
    a_name, b_name = name_of(a), name_of(b)
    await a.call("invite", name=b_name, ladder=ladder, length=length)
    await b.next_push("invited", where=lambda p: p["data"]["from"] == a_name)
    started = await b.call("join", name=a_name)
    assert (await a.next_push("match_started"))["data"] == started
    assert started["status"] == "playing"
    return int(started["match"])


async def play(winner: LobbyClient, loser: LobbyClient, length: int | str = 1,
               ladder: str = "backgammon") -> dict[str, Any]:
    """``winner`` invites ``loser``, who joins and resigns: a rated match; returns the
    ``resign`` reply."""
    await start_match(winner, loser, length, ladder)
    data: dict[str, Any] = await loser.call("resign")
    assert data["winner"] == name_of(winner) and data["rated"], data
    return data


async def expect_error(aw: Awaitable[Any], code: str) -> LobbyError:
    """``aw`` must raise :class:`LobbyError` with ``code`` and a message for people."""
    try:
        await aw
    except LobbyError as e:
        assert e.code == code, (e.code, e.message)
        assert e.message.strip(), "a refusal explains itself"
        assert e.reply["ok"] is False and e.reply["error"]["code"] == code
        return e
    raise AssertionError(f"expected a {code!r} refusal")


async def settle(c: LobbyClient) -> list[Push]:
    """Every push already on its way to ``c``: one round trip, then what has arrived.

    The server answers a connection's frames in order and queues the pushes a
    command causes before it reads the next frame, so after this round trip
    every push caused earlier (by anyone) has been delivered: what is not among
    them was not sent.
    """
    await c.call("help", command="help")
    return c.drain_pushes()


async def given_up(c: LobbyClient) -> None:
    """``c`` is down for good, with no reconnect under way or to come.

    A client that will not connect again refuses a request at once; one still
    reconnecting holds it until it is connected (and then sends it), so this is
    decided by the client's own state, not by waiting to see whether it comes back.
    """
    try:
        await asyncio.wait_for(c.request("help"), LIVENESS)
    except Disconnected:
        return
    except TimeoutError:
        raise AssertionError("the client is still trying to connect again") from None
    raise AssertionError("the client connected again")


class Gate:
    """A stand-in handler that waits until released: a request the server is still working on.

    Installed for one command (the ``gate`` fixture) so that a test can drop the
    connection, or close the client, while a request is certainly in flight.
    """

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def handler(self, call: Any) -> Any:
        self.entered.set()
        await self.release.wait()
        return {"held": True}


async def told_presence(c: LobbyClient, expected: dict[str, str],
                        timeout: float = REQUEST_TIMEOUT) -> list[dict[str, Any]]:
    """Read ``c``'s ``presence`` pushes until each player of ``expected`` has been told with
    that status (``ready``, ``playing``, ``offline``), however the changes were batched;
    every entry read, in order. Other pushes read meanwhile are dropped."""
    read: list[dict[str, Any]] = []
    waiting = dict(expected)

    async def find() -> None:
        while waiting:
            p = await c.next_push("presence", timeout)
            for entry in p["data"]["players"]:
                read.append(entry)
                if waiting.get(entry["player"]) == entry["status"]:
                    del waiting[entry["player"]]

    try:
        await asyncio.wait_for(find(), timeout)
    except TimeoutError:
        raise AssertionError(f"not told {waiting} within {timeout} s; told {read}") from None
    return read


def presence_entries(pushes: list[Push]) -> list[tuple[str, str]]:
    """The (player, status) of every ``presence`` entry among ``pushes``, in order."""
    return [(e["player"], e["status"]) for p in pushes if p["event"] == "presence"
            for e in p["data"]["players"]]


async def until_offline(c: LobbyClient, name: str) -> None:
    """Until the lobby has seen ``name``'s connection go, as ``whois`` tells (a drop's time
    counts from then; the ``presence`` push saying so may come up to a second later)."""
    from testkit.probes import wait_until

    async def gone() -> bool:
        return not (await c.call("whois", name=name))["online"]

    await wait_until(gone, what=f"{name} offline")


def check_ladder_update(update: dict[str, Any], table: dict[str, Any],
                        changed: Iterable[str]) -> None:
    """A ``ladder_updated``'s data against the ladder read after it (``ladder --all``, every
    row in one page) and the players whose ratings it changed: the ladder's size, the rows of
    the best-placed of them as the ladder shows them, and how many others moved."""
    moved = set(changed)
    assert len(table["players"]) == table["total"], "read the whole ladder"
    rows = [r for r in table["players"] if r["player"] in moved]
    assert rows, "nothing moved"
    assert update["ladder"] == table["ladder"]
    assert update["total"] == table["total"]
    assert update["changed"] == rows[:CHANGED_ROWS]
    assert update["more"] == len(rows) - len(update["changed"])


async def heard(c: LobbyClient, **counts: int) -> dict[str, list[dict[str, Any]]]:
    """What ``c`` was pushed, by event, once it has at least ``counts`` of those events; then
    after a pause and a round trip (:func:`settle`), so that a double would be there too."""
    got: dict[str, list[dict[str, Any]]] = {}

    def take() -> None:
        for push in c.drain_pushes():
            got.setdefault(push["event"], []).append(dict(push["data"]))

    async def enough() -> None:
        while any(len(got.get(event, ())) < n for event, n in counts.items()):
            take()
            await asyncio.sleep(0.02)

    await asyncio.wait_for(enough(), 10)
    await asyncio.sleep(0.3)
    for push in await settle(c):
        got.setdefault(push["event"], []).append(dict(push["data"]))
    return got
