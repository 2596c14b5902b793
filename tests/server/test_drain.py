"""A graceful stop: ``/readyz`` says 503 and new connections are refused while the lobby
drains; every client is told ``server_shutdown``; a command sent before the notice is
answered (and committed) before its connection closes with 1001; ``matchlobby serve`` exits 0
on SIGTERM; and the Python client comes back to the restarted server by itself and resumes."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit.clients import Gate
from testkit.constants import ADMIN, PASSWORD
from testkit.http import http_get, until_ready
from testkit.probes import wait_until
from testkit.server_loop import LobbyServer
from testkit.server_process import ServerProcess
from websockets.asyncio.client import ClientConnection, connect
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from clients import LobbyClient
from clients.lobby_client import Disconnected
from server.config import ConfigError, load_config

HANDSHAKE = {"Upgrade": "websocket", "Connection": "Upgrade",
             "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}


def check_notice(push: dict[str, Any]) -> None:
    data = push["data"]
    assert set(data) == {"reconnect_after", "reason"}, data
    assert 1.0 <= data["reconnect_after"] <= 3.0, data
    assert data["reason"].startswith("The server is restarting"), data


async def test_a_drain_answers_the_command_in_flight_and_closes_every_connection(
        lobby: LobbyServer, gate: Gate) -> None:
    assert lobby.server is not None and lobby.port is not None
    alice, bob = await lobby.player("alice"), await lobby.client()
    held = asyncio.create_task(alice.request("events"))
    await gate.entered.wait()
    draining = asyncio.create_task(lobby.server.drain())

    assert await until_ready(lobby.port, 503) == "draining\n"
    assert (await http_get(lobby.port, "/healthz"))[0] == 200
    status, headers, body = await http_get(lobby.port, "/ws", headers=HANDSHAKE)
    assert (status, headers["retry-after"]) == (503, "2"), (status, body)
    assert body == "The server is restarting; connect again in a moment.\n"

    check_notice(await bob.next_push("server_shutdown"))  # idle: told, then closed
    assert (await bob.next_push("disconnected"))["data"]["code"] == 1001
    check_notice(await alice.next_push("server_shutdown"))
    gate.release.set()
    reply = await held  # answered before its connection closes
    assert reply["ok"] and reply["data"] == {"held": True}, reply
    gone = await alice.next_push("disconnected")
    assert (gone["data"]["code"], gone["data"]["reason"]) == (1001, "server restarting")
    await draining


async def test_a_command_still_running_when_the_grace_ends_is_cut_off(
        harness: LobbyServer, gate: Gate) -> None:
    harness.configure = lambda config: replace(config, shutdown_grace=0)
    server = await harness.start()
    alice = await harness.player("alice")
    held = asyncio.create_task(alice.request("events"))
    await gate.entered.wait()
    await server.drain()  # the grace ends with the command still running
    check_notice(await alice.next_push("server_shutdown"))  # told all the same
    assert (await alice.next_push("disconnected"))["data"]["code"] == 1001
    with pytest.raises(Disconnected):
        await held
    gate.release.set()  # the command finishes; the stop waits for it
    await harness.stop()


class SlowReader:
    """A WebSocket client on a bare socket (websockets' sans-I/O protocol) that decides when
    it reads what arrived, and so when it answers the server's ping."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/ws"))
        self.sock = socket.socket()
        self.loop = asyncio.get_running_loop()

    async def open(self) -> None:
        self.sock.setblocking(False)
        await self.loop.sock_connect(self.sock, ("127.0.0.1", self.port))
        self.proto.send_request(self.proto.connect())
        await self.flush()
        hello: list[dict[str, Any]] = []
        while not hello:
            self.proto.receive_data(await self.loop.sock_recv(self.sock, 65536))
            assert self.proto.handshake_exc is None, self.proto.handshake_exc
            hello += [json.loads(e.data) for e in self.proto.events_received()
                      if getattr(e, "opcode", None) is Opcode.TEXT]
        assert hello[0]["event"] == "hello", hello

    async def flush(self) -> None:
        for data in self.proto.data_to_send():
            if data:
                await self.loop.sock_sendall(self.sock, data)

    async def send(self, message: dict[str, Any]) -> None:
        self.proto.send_text(json.dumps(message).encode())
        await self.flush()

    async def unread(self) -> bytes:
        """The next bytes that arrive, not yet read by the protocol (nor answered)."""
        return await self.loop.sock_recv(self.sock, 65536)

    async def read_to_the_end(self, data: bytes = b"") -> list[dict[str, Any]]:
        """Read (pings answered) until the server closes: the messages."""
        messages: list[dict[str, Any]] = []
        while True:
            if data:
                self.proto.receive_data(data)
            else:
                self.proto.receive_eof()
            for event in self.proto.events_received():
                if event.opcode is Opcode.TEXT:
                    messages.append(json.loads(event.data))
            await self.flush()
            if self.proto.state is State.CLOSED or not data:
                return messages
            data = await self.loop.sock_recv(self.sock, 65536)


async def test_a_frame_sent_before_the_notice_was_read_is_answered(lobby: LobbyServer) -> None:
    """The notice is followed by a ping: whatever the client sent before it answered the
    ping (before it read the notice) gets its reply before the close."""
    assert lobby.server is not None and lobby.port is not None
    client = SlowReader(lobby.port)
    await client.open()
    draining = asyncio.create_task(lobby.server.drain())
    arrived = await client.unread()  # the notice, at least: the lobby is draining
    await client.send({"id": "late", "cmd": "whois", "args": {"name": ADMIN}})
    messages = await client.read_to_the_end(arrived)
    assert [m["event"] for m in messages if "event" in m] == ["server_shutdown"], messages
    replies = [m for m in messages if m.get("id") == "late"]
    assert len(replies) == 1 and replies[0]["ok"], messages
    assert client.proto.close_rcvd is not None and client.proto.close_rcvd.code == 1001
    client.sock.close()
    await draining


async def test_a_client_that_never_answers_does_not_hold_the_stop(harness: LobbyServer) -> None:
    """When the grace ends, a connection whose client answers neither the ping nor the close
    is cut within a moment: the drain leaves no connection open behind it (the stop would
    otherwise wait for websockets' closing handshake to time out)."""
    harness.configure = lambda config: replace(config, shutdown_grace=0)
    server = await harness.start()
    assert harness.port is not None
    stuck = SlowReader(harness.port)
    await stuck.open()
    try:
        await server.drain()
        listening = server.transport.server
        assert listening is not None
        open_ones = [c for c in listening.connections if not c.transport.is_closing()]
        assert open_ones == []
    finally:
        stuck.sock.close()
        await harness.stop()


def test_shutdown_grace_is_read_from_the_server_table(tmp_path: Path) -> None:
    config = tmp_path / "lobby.toml"
    assert load_config(None).shutdown_grace == 10.0
    config.write_text("[server]\nshutdown_grace = 2.5\n")
    assert load_config(config).shutdown_grace == 2.5
    for bad in ("-1", '"soon"'):
        config.write_text(f"[server]\nshutdown_grace = {bad}\n")
        with pytest.raises(ConfigError, match="shutdown_grace"):
            load_config(config)


async def _frame(ws: ClientConnection, rid: str) -> dict[str, Any]:
    """Frames read until the reply ``rid``, which must be a success: its data."""
    while (message := json.loads(await ws.recv())).get("id") != rid:
        pass
    assert message["ok"], message
    return dict(message["data"])


async def test_sigterm_answers_the_last_command_then_the_client_comes_back_and_resumes(
        db_path: Path, fast_config: Path, tmp_path: Path) -> None:
    server = ServerProcess(db_path, fast_config, log=tmp_path / "serve.log").start()
    alice = LobbyClient(server.url, reconnect=True, backoff=(0.05, 0.5))
    try:
        await server.ready()
        await alice.connect()
        await alice.register("alice", PASSWORD)
        async with connect(server.url) as bob:
            assert json.loads(await bob.recv())["event"] == "hello"
            await bob.send(json.dumps({"id": "r", "cmd": "register",
                                       "args": {"name": "bob", "password": PASSWORD}}))
            await _frame(bob, "r")
            await alice.call("invite", name="bob", ladder="backgammon", length=1)
            await bob.send(json.dumps({"id": "j", "cmd": "join", "args": {"name": "alice"}}))
            await _frame(bob, "j")

            # the signal follows the command at once: it may not even have been read yet
            await bob.send(json.dumps({"id": "last", "cmd": "resign", "args": {}}))
            server.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            frames = [json.loads(m) async for m in bob]
            assert bob.close_code == 1001, (bob.close_code, frames)

        replies = [f for f in frames if f.get("id") == "last"]
        assert len(replies) == 1 and replies[0]["ok"], frames
        finished = replies[0]["data"]
        assert finished["winner"] == "alice"
        told = [f for f in frames if f.get("event") == "server_shutdown"]
        assert len(told) == 1, frames
        check_notice(told[0])
        check_notice(await alice.next_push("server_shutdown"))
        assert (await alice.next_push("disconnected"))["data"]["code"] == 1001
        assert await asyncio.to_thread(server.proc.wait, 60) == 0  # type: ignore[union-attr]
        assert "matchlobby stopped; everything is saved." in server.output(server.began_at)

        server.start()  # the same port and database
        await server.ready()
        await alice.next_push("reconnected", timeout=60)

        async def resumed() -> bool:
            return bool((await alice.request("invitations"))["ok"])

        await wait_until(resumed, 30, "alice to be logged in again")
        assert alice.player == "alice"
        # the resign answered during the drain was committed: the new server rates it
        rating = (await alice.call("rating", ladder="backgammon"))["ratings"][0]
        after = {c["player"]: c["after"] for c in finished["changes"]}
        assert rating["rating"] == after["alice"]
    finally:
        await alice.close()
        server.stop()


@pytest.mark.sqlite_only("the signals are the process's, whatever its database")
async def test_ctrl_c_drains_and_a_second_one_ends_the_wait(
        db_path: Path, fast_config: Path, tmp_path: Path) -> None:
    config = tmp_path / "patient.toml"
    config.write_text("[server]\nshutdown_grace = 3600\n\n" + fast_config.read_text())
    server = ServerProcess(db_path, config, log=tmp_path / "serve.log").start()
    try:
        await server.ready()
        stuck = SlowReader(server.port)  # it never answers the ping: the drain would wait an hour
        await stuck.open()
        server.proc.send_signal(signal.SIGINT)  # type: ignore[union-attr]
        assert await until_ready(server.port, 503) == "draining\n"
        server.proc.send_signal(signal.SIGINT)  # type: ignore[union-attr]
        assert await asyncio.to_thread(server.proc.wait, 60) == 0  # type: ignore[union-attr]
        said = server.output(server.began_at)
        assert "matchlobby stopped; everything is saved." in said
        assert "the wait was cut short by a second signal: closing 1 connections" in said
        stuck.sock.close()
    finally:
        server.stop()
