"""Helpers for the web page's tests and its screenshot script.

A real lobby server runs in the test's event loop on a free port with a real
SQLite file; Debian's Chromium is driven by Playwright's async API in the same
loop; players are driven through :class:`clients.LobbyClient`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, Playwright

from clients import LobbyClient
from server.app import RunningServer, start_server
from server.config import Config, PasswordHashing

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ADMIN = "director"
ADMIN_PASSWORD = "director-secret"
PASSWORD = "pw-secret"
FAST_CONFIG = "[password_hashing]\nn = 1024\n"
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"


def browser_available() -> bool:
    return CHROMIUM.exists()


def matchlobby_command() -> list[str]:
    script = Path(sys.executable).with_name("matchlobby")
    return [str(script)] if script.exists() else [sys.executable, "-m", "server.cli"]


def add_admin(db: Path, config: Path, name: str = ADMIN, password: str = ADMIN_PASSWORD) -> None:
    """``matchlobby user add NAME --admin`` with the password on standard input."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [*matchlobby_command(), "user", "add", name, "--admin", "--db", str(db),
         "--config", str(config)],
        input=password + "\n", capture_output=True, text=True, timeout=60, env=env,
        cwd=db.parent, check=False)
    assert done.returncode == 0, done.stderr


def make_template(folder: Path) -> Path:
    """A database holding only the admin account, and the fast-hashing config beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "matchlobby.toml"
    config.write_text(FAST_CONFIG, encoding="utf-8")
    db = folder / "template.db"
    add_admin(db, config)
    return db


async def launch(playwright: Playwright) -> Browser:
    return await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                            headless=True)


class Site:
    """One lobby server on a free port, and the Python clients talking to it."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.server: RunningServer | None = None
        self.clients: list[LobbyClient] = []

    async def start(self, port: int = 0) -> Site:
        config = Config(database=str(self.db), password=PasswordHashing(n=2**10))
        self.server = await start_server(config, host="127.0.0.1", port=port)
        return self

    async def restart(self) -> None:
        """Stop the server (dropping every connection) and start it again on the same port."""
        assert self.server is not None
        port = self.server.port
        server, self.server = self.server, None
        await server.stop()
        await self.start(port)

    @property
    def http_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/"

    @property
    def ws_url(self) -> str:
        assert self.server is not None
        return f"ws://127.0.0.1:{self.server.port}/ws"

    async def client(self) -> LobbyClient:
        c = LobbyClient(self.ws_url, reconnect=False)
        await c.connect()
        self.clients.append(c)
        return c

    async def player(self, name: str) -> LobbyClient:
        c = await self.client()
        await c.register(name, PASSWORD)
        return c

    async def admin(self) -> LobbyClient:
        c = await self.client()
        data = await c.login(ADMIN, ADMIN_PASSWORD)
        assert data["role"] == "admin"
        return c

    async def aclose(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop()


def name_of(client: LobbyClient) -> str:
    assert client.credentials is not None
    return client.credentials[0]


async def play(winner: LobbyClient, loser: LobbyClient, length: int = 1,
               ladder: str = "backgammon") -> dict[str, Any]:
    """``winner`` invites ``loser``, who joins and resigns; returns the ``match_finished`` reply."""
    w, lo = name_of(winner), name_of(loser)
    await winner.call("invite", name=lo, ladder=ladder, length=length)
    await loser.next_push("invited", where=lambda p: p["data"]["from"] == w)
    await loser.call("join", name=w)
    await winner.next_push("match_started")
    data: dict[str, Any] = await loser.call("resign")
    assert data["winner"] == w and data["rated"], data
    return data


async def open_page(browser: Browser, url: str, width: int = 1280, height: int = 900,
                    errors: list[str] | None = None) -> Page:
    """A page in a fresh context, loaded and connected (its ladders shown).

    Script errors and console errors go to ``errors``, except the browser's own notes of a
    failed WebSocket attempt while the server is down (the page retries).
    """
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    if errors is not None:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text)
                if m.type == "error" and "WebSocket connection to" not in m.text else None)
    await page.goto(url)
    await page.wait_for_selector(".connection.ok")
    await page.wait_for_selector("section.ladder table")
    return page


def copy_template(template: Path, target: Path) -> Path:
    shutil.copyfile(template, target)
    return target
