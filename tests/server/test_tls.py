"""With a certificate and key configured, the lobby speaks wss:// (and plain ws:// is refused)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import websockets.asyncio.client
from websockets.exceptions import InvalidMessage

from server.app import start_server
from server.config import Config, PasswordHashing, Tls

pytestmark = [pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl tool"),
              pytest.mark.both_loops]  # TLS is the event loop's own (uvloop has its own)


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


async def test_the_lobby_over_wss(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    config = Config(database=str(tmp_path / "lobby.db"), password=PasswordHashing(n=2**10),
                    tls=Tls(str(cert), str(key)))
    server = await start_server(config, port=0)
    try:
        trust = ssl.create_default_context(cafile=str(cert))
        async with websockets.asyncio.client.connect(
                f"wss://127.0.0.1:{server.port}/ws", ssl=trust) as ws:
            assert '"event":"hello"' in str(await ws.recv())
            await ws.send("ladders")
            assert '"ok":true' in str(await ws.recv())
        with pytest.raises((InvalidMessage, OSError, EOFError)):
            async with websockets.asyncio.client.connect(
                    f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as plain:
                await plain.recv()
    finally:
        await server.stop()
