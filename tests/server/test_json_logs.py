"""The server's log as JSON lines (``serve --log-format json``), each logger's level from the
configuration, and what never reaches the log: passwords, session tokens, what frames say."""

from __future__ import annotations

import importlib
import json
import logging
import re
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import websockets.asyncio.client
from testkit import postgres
from testkit.cli import run_cli_async
from testkit.clients import expect_error
from testkit.logged_serve import LoggedServe, config_file, grep
from websockets.exceptions import InvalidStatus

import server
from clients.lobby_client import LobbyClient
from server.config import ConfigError, load_config
from server.logsetup import JsonFormatter
from server.net.transport import WS_LOG

FIRST_PASSWORD = "first-Secret-pw-7713"
NEW_PASSWORD = "second-Secret-pw-5521"
WRONG_PASSWORD = "wrong-Secret-pw-9042"
WORDS = "words-only-a-frame-holds-3318"
VERBOSE = """[logging]
level = "debug"
[logging.levels]
matchlobby = "debug"
websockets = "debug"
"server.net.transport.websockets" = "debug"
aiosqlite = "debug"
"""
OPERATING = Path(__file__).resolve().parents[2] / "docs" / "OPERATING.md"
NAMED = {"matchlobby", "matchlobby.commands", "matchlobby.reload"}
"""Loggers named for what they say; every other is named after its module (``__name__``)."""


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[LoggedServe]:
    server = LoggedServe(tmp_path, config_file(tmp_path / "lobby.toml", VERBOSE),
                         "--log-format", "json")
    yield server
    server.stop()


async def client(server: LoggedServe) -> LobbyClient:
    c = LobbyClient(server.url, reconnect=False)
    await c.connect()
    return c


async def test_every_line_is_json_and_no_secret_is_logged(serve: LoggedServe,
                                                          tmp_path: Path) -> None:
    await serve.start()
    first = await client(serve)
    token = (await first.register("alice", FIRST_PASSWORD))["session"]["token"]
    second = await client(serve)
    other_token = (await second.login("alice", FIRST_PASSWORD))["session"]["token"]
    third = await client(serve)
    assert (await third.call("resume", token=token))["player"] == "alice"
    await third.call("shout", text=WORDS)
    await expect_error(third.call("tell", name="alice", text=WORDS), "bad_request")  # oneself
    await expect_error(third.call("whois", name=WORDS[:20]), "not_found")
    assert (await third.send_raw(json.dumps({"cmd": WORDS})))["error"]["code"] == \
        "unknown_command"
    assert (await third.send_raw(f"shout {WORDS} {FIRST_PASSWORD}"))["ok"] is True
    # the password changed by the operator's command line: the login ends, the new one works
    done = await run_cli_async(["user", "add", "alice", "--db", str(tmp_path / "lobby.db"),
                                "--config", str(serve.config)], stdin=NEW_PASSWORD + "\n")
    assert done.returncode == 0, done.stderr
    await third.next_push("logged_out")
    fourth = await client(serve)
    await expect_error(fourth.login("alice", WRONG_PASSWORD), "forbidden")
    new_token = (await fourth.login("alice", NEW_PASSWORD))["session"]["token"]
    await fourth.call("logout")
    for c in (first, second, third, fourth):
        await c.close()
    assert serve.stop() == 0

    log = serve.stderr()
    for secret in (FIRST_PASSWORD, NEW_PASSWORD, WRONG_PASSWORD, token, other_token, new_token,
                   WORDS, WORDS[:20]):
        assert secret not in log
    entries = [json.loads(line) for line in log.splitlines()]
    for entry in entries:
        assert {"time", "level", "logger", "event"} <= set(entry)
        assert entry["time"].endswith("Z")
        assert datetime.fromisoformat(entry["time"]).tzinfo == UTC
        assert entry["level"] in ("debug", "info", "warning", "error", "critical")
    commands = [e for e in entries if e["logger"] == "matchlobby.commands"]
    login = [e for e in commands if e.get("command") == "login"]
    assert [e.get("code") for e in login] == [None, "forbidden", None]
    assert all(e["player"] == "alice" for e in login if "code" not in e)
    assert all(isinstance(e["duration"], float) and e["duration"] >= 0 for e in commands
               if "duration" in e)
    assert {"register", "resume", "shout", "tell", "whois", "logout"} <= {
        e.get("command") for e in commands}
    assert [e.get("code") for e in commands if e.get("command") == "whois"] == ["not_found"]
    # the frame with an unknown command: refused, its name not repeated
    assert any(e.get("code") == "unknown_command" and "command" not in e for e in commands)
    # websockets' own lines at INFO are there (at DEBUG it would have logged the frames)
    assert grep([e["logger"] for e in entries], "websockets")
    assert not [e for e in entries if "node" in e]  # one SQLite file: one node


async def test_each_loggers_level_comes_from_the_configuration(tmp_path: Path) -> None:
    config = config_file(tmp_path / "lobby.toml", '[logging]\nlevel = "warning"\n'
                                                  '[logging.levels]\n'
                                                  '"matchlobby.commands" = "debug"\n'
                                                  '"server.net" = "info"\n')
    serve = LoggedServe(tmp_path, config)
    try:
        await serve.start()
        c = await client(serve)
        await c.call("who")
        await c.close()
    finally:
        assert serve.stop() == 0
    lines = serve.lines()
    assert grep(lines, "DEBUG matchlobby.commands: who from 127.0.0.1: ok in")  # text, by default
    # server.net's level holds for the loggers under it, websockets' own lines among them
    assert grep(lines, "INFO server.net.transport: browsers may connect from")
    assert grep(lines, "INFO server.net.transport.websockets: connection open")
    # the root's level, warning, for the others: nothing else at INFO (such as "stopping")
    assert grep(lines, "INFO ") == grep(lines, "INFO server.net.")
    assert not grep(lines, "matchlobby: stopping")


def test_a_level_that_does_not_exist_is_a_clear_error(tmp_path: Path) -> None:
    for table, said in (('level = "verbose"', "[logging] level: 'verbose' is not a log level"),
                        ('[logging.levels]\nwebsockets = "loud"',
                         "[logging.levels] 'websockets': 'loud' is not a log level"),
                        ('format = "xml"', "[logging] format must be one of text, json")):
        path = tmp_path / "bad.toml"
        path.write_text(f"[logging]\n{table}\n")
        with pytest.raises(ConfigError, match="use one of debug, info, warning, error, critical"
                           if "level" in said else "not 'xml'") as raised:
            load_config(path)
        assert said in str(raised.value)


async def test_repeated_lines_are_held_back_in_json_too(serve: LoggedServe) -> None:
    """What clients can make the server log often is let through ten times a minute, the
    tenth saying so (server/logfilter.py), in JSON as in text."""
    await serve.start()
    for _ in range(14):
        with pytest.raises(InvalidStatus):
            await websockets.asyncio.client.connect(serve.url, origin="http://elsewhere.test")
    assert serve.stop() == 0
    entries = [json.loads(line) for line in serve.lines()]
    refused = [e for e in entries if e["event"].startswith("refused a connection from origin")]
    assert len(refused) == 10 and all(e["level"] == "warning" for e in refused)
    assert "(more like this in the next" in refused[-1]["event"]


def test_a_json_line_names_its_node_and_carries_its_exception() -> None:
    try:
        raise ValueError("broken")
    except ValueError:
        record = logging.getLogger("matchlobby").makeRecord(
            "matchlobby", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info(),
            extra={"command": "who", "code": "internal", "player": None})
    entry = json.loads(JsonFormatter("node-a").format(record))
    assert entry["event"] == "failed here" and entry["node"] == "node-a"
    assert (entry["command"], entry["code"], "player" in entry) == ("who", "internal", False)
    assert entry["exception"].startswith("Traceback") and "ValueError: broken" in entry["exception"]


async def test_each_line_names_its_node_on_postgresql(tmp_path: Path) -> None:
    server = postgres.server_url()
    if server is None:
        pytest.skip("needs PostgreSQL")
    config = config_file(tmp_path / "lobby.toml", '[server]\nnode = "lobby-7"')
    serve = LoggedServe(tmp_path, config, "--log-format", "json", db=postgres.new_database(server))
    try:
        await serve.start()
    finally:
        assert serve.stop() == 0
    entries = [json.loads(line) for line in serve.lines()]
    assert entries and all(e["node"] == "lobby-7" for e in entries)


def test_every_logger_is_named_as_the_docs_list_it() -> None:
    # ``[logging.levels]`` takes the names the docs give: a module logging under another
    # module's name, or a logger the table leaves out, cannot be set as documented
    root = Path(server.__file__).parent
    modules = [importlib.import_module(".".join(("server", *p.relative_to(root).with_suffix("")
                                                  .parts)).removesuffix(".__init__"))
               for p in sorted(root.rglob("*.py"))]
    used = {m.__name__: m.log.name for m in modules
            if isinstance(getattr(m, "log", None), logging.Logger)}
    assert {m: name for m, name in used.items() if name not in (m, *NAMED)} == {}
    names = {*used.values(), WS_LOG.name, "stderr"}
    table = OPERATING.read_text(encoding="utf-8").split("| logger | what it says |\n")[1]
    rows = table.split("\n\n")[0].splitlines()[1:]
    listed = {name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])}

    def covers(entry: str, name: str) -> bool:  # ``server.lobby.…``: every logger under it
        return name == entry or (entry.endswith(".…") and name.startswith(entry[:-1]))

    assert sorted(n for n in names if not any(covers(e, n) for e in listed)) == []
    assert sorted(e for e in listed if not any(covers(e, n) for n in names)) == []
