"""SIGHUP: the running server reads its configuration file again and applies what it can
(limits, origins, log levels, the TLS certificate); a broken file changes nothing; what needs
a restart is said."""

from __future__ import annotations

import json
import logging
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import websockets.asyncio.client
from testkit.http import http_get
from testkit.logged_serve import LoggedServe, config_file, grep
from testkit.server_process import free_port
from websockets.exceptions import InvalidStatus

from clients.lobby_client import LobbyClient
from server import reload
from server.app import start_server
from server.config import load_config

FRAME = "help " + "x" * 2000  # answered (bad_request: no such command) under 4096 bytes


async def test_sighup_applies_new_limits_to_the_running_server(tmp_path: Path) -> None:
    path = tmp_path / "lobby.toml"
    config_file(path, "[limits]\nmax_message = 4096")
    serve = LoggedServe(tmp_path, path)
    try:
        await serve.start()
        pid = serve.proc.pid if serve.proc else 0
        c = LobbyClient(serve.url, reconnect=False)
        await c.connect()
        assert (await c.send_line(FRAME))["error"]["code"] == "bad_request"
        origin = f"http://lobby.example.org:{serve.port}"
        with pytest.raises(InvalidStatus):  # not the server's own origin
            await websockets.asyncio.client.connect(serve.url, origin=origin)

        # a broken file: nothing changes, and the log says why
        path.write_text("[limits]\nmax_message = 1024\n[server\n")
        said = await serve.reload("nothing was changed")
        assert grep(said, "ERROR matchlobby.reload: SIGHUP:", str(path))
        assert (await c.send_line(FRAME))["error"]["code"] == "bad_request"
        path.write_text("[limits]\nmax_message = -5\n")
        await serve.reload("max_message: expected a whole number that is not negative, not -5; "
                           "nothing was")
        assert (await c.send_line(FRAME))["error"]["code"] == "bad_request"
        assert not grep(serve.lines(), "matchlobby.commands")

        # lower the limit, allow an origin, log each command as JSON, move the port (which
        # needs a restart)
        config_file(path, f'[server]\nport = {serve.port + 1}',
                    f'[limits]\nmax_message = 1024\norigins = ["{origin}"]',
                    '[logging]\nformat = "json"\n[logging.levels]\n"matchlobby.commands" = "debug"')
        said = await serve.reload("read again; applied: logging, limits.max_message, "
                                  "limits.origins")
        entries = [json.loads(line) for line in said]
        assert {"level": "warning", "logger": "matchlobby.reload",
                "event": "SIGHUP: port changed; it takes effect at the next restart"} in [
            {k: e[k] for k in ("level", "logger", "event")} for e in entries]
        assert f"browsers may connect from {origin} (limits.origins)" in [
            e["event"] for e in entries]
        # the same connection, on the same process: the frame it sent before is now too large
        refused = await c.send_line(FRAME)
        assert refused["error"]["code"] == "too_large"
        assert refused["error"]["message"] == "Messages are limited to 1024 bytes."
        assert (await c.next_push("disconnected"))["data"]["code"] == 1009
        async with websockets.asyncio.client.connect(serve.url, origin=origin) as ws:
            assert "hello" in str(await ws.recv())
        c = LobbyClient(serve.url, reconnect=False)
        await c.connect()
        await c.call("who")
        await c.close()
        await serve.until(lambda: grep(serve.lines(), '"command": "who"', '"level": "debug"'),
                          "the command is logged")
        assert serve.proc is not None and serve.proc.pid == pid and serve.proc.poll() is None
    finally:
        assert serve.stop() == 0


async def test_a_reload_keeps_the_command_line_and_refuses_a_file_not_in_utf8(
        tmp_path: Path) -> None:
    path = config_file(tmp_path / "lobby.toml", "[limits]\nmax_message = 4096")
    metrics = free_port()
    serve = LoggedServe(tmp_path, path, "--metrics-address", f"127.0.0.1:{metrics}")
    try:
        await serve.start()
        # --db and --metrics-address stand instead of the file's values, at a reload too
        said = await serve.reload("read again")
        assert grep(said, "read again; nothing to apply"), said
        assert not grep(said, "WARNING"), said
        assert (await http_get(metrics, "/metrics"))[0] == 200

        path.write_bytes('[server]\nname = "Café"\n'.encode("latin-1"))
        said = await serve.reload("nothing was changed")
        assert grep(said, "ERROR matchlobby.reload: SIGHUP:", f"{path}: line 2 is not UTF-8"), said
        assert not grep(said, "Traceback"), said
        c = LobbyClient(serve.url, reconnect=False)
        await c.connect()
        assert (await c.send_line(FRAME))["error"]["code"] == "bad_request"  # the old limit
        await c.close()
    finally:
        assert serve.stop() == 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl tool")
async def test_a_reload_serves_the_new_certificate_to_new_connections(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="matchlobby.reload")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make_certificate(cert, key, "first.test")
    path = tmp_path / "lobby.toml"
    config_file(path, f'[server]\ndatabase = "{tmp_path / "lobby.db"}"\nport = 0',
                f'[tls]\ncertificate = "{cert}"\nkey = "{key}"')
    server = await start_server(load_config(path))
    try:
        assert await served_name(server.port) == "first.test"
        make_certificate(cert, key, "second.test")
        reload.reload_file(server, str(path))
        assert await served_name(server.port) == "second.test"
        assert "applied: the TLS certificate" in caplog.text
        # a key that does not go with the certificate: the old pair stays in use
        make_certificate(tmp_path / "other.pem", tmp_path / "other-key.pem", "third.test")
        shutil.copy(tmp_path / "other-key.pem", key)
        reload.reload_file(server, str(path))
        assert await served_name(server.port) == "second.test"
        assert "key values mismatch" in caplog.text and "nothing was changed" in caplog.text
    finally:
        await server.stop()


def make_certificate(cert: Path, key: Path, name: str) -> None:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)


async def served_name(port: int) -> str:
    """The common name on the certificate a new connection is shown (read, not checked)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    async with websockets.asyncio.client.connect(f"wss://127.0.0.1:{port}/ws",
                                                 ssl=context) as ws:
        ssl_object = ws.transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
    pem = ssl.DER_cert_to_PEM_cert(der)
    shown = subprocess.run(["openssl", "x509", "-noout", "-subject"], input=pem, text=True,
                           check=True, capture_output=True).stdout
    return shown.split("CN", 1)[1].strip(" =\n")
