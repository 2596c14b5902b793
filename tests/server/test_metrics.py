"""Metrics for operators: a real server with ``[metrics] address`` serves Prometheus' text format
on a listener of its own; a scripted session through the real protocol moves each counter by
exactly what it did; without the setting nothing listens."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from testkit.clients import expect_error, play
from testkit.server_loop import LobbyServer

from server.config import Config, ConfigError, MetricsSettings, load_config

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape_text(port: int, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return str(response.read().decode())


def refusal(port: int, path: str, method: str = "GET") -> int:
    """The HTTP status of a request that must be refused (its connection closed after)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=b"x" if method == "POST" else None)
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError as e:
        e.close()
        return e.code
    raise AssertionError(f"{method} {path} was answered")


async def scrape(port: int, node: str | None) -> Samples:
    """Every ``matchlobby_`` sample, by name and labels (``node`` checked and left out)."""
    text = await asyncio.to_thread(scrape_text, port)
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.startswith("matchlobby_"):
                continue
            labels = dict(s.labels)
            assert labels.pop("node", None) == node, s
            samples[(s.name, frozenset(labels.items()))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def moved(before: Samples, after: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """How each series of ``name`` moved, by its labels (only those that moved)."""
    out = {}
    for key in set(before) | set(after):
        if key[0] == name:
            delta = after.get(key, 0.0) - before.get(key, 0.0)
            if delta:
                out[tuple(sorted(key[1]))] = delta
    return out


@pytest.fixture
def node_name(backend: str) -> str | None:
    return "node-m" if backend == "postgresql" else None


@pytest.fixture
async def metered(harness: LobbyServer, node_name: str | None) -> LobbyServer:
    """A running server whose metrics listen on a free port (named as a node on PostgreSQL)."""
    def configure(config: Config) -> Config:
        config = replace(config, metrics=MetricsSettings("127.0.0.1:0"))
        return config if node_name is None else replace(config, node=node_name)

    harness.configure = configure
    await harness.start()
    return harness


async def test_a_session_moves_each_counter_by_what_it_did(metered: LobbyServer,
                                                           node_name: str | None) -> None:
    server = metered.server
    assert server is not None and server.metrics_listener is not None
    port = server.metrics_listener.port
    commits_before = server.db.commits
    before = await scrape(port, node_name)
    commits_seen = server.db.commits
    # the plugins' state was rebuilt from the log once, at start
    assert value(before, "matchlobby_replay_seconds_count", cause="start") == 1
    assert commits_before <= value(before, "matchlobby_commit_seconds_count") <= commits_seen

    expected: Counter[tuple[str, str]] = Counter()
    alice, bob = await metered.players("alice", "bob")
    expected["register", "ok"] += 2
    stranger = await metered.client()
    await expect_error(stranger.login("bob", "not the password"), "forbidden")
    expected["login", "forbidden"] += 1
    first = await metered.admin()
    expected["login", "ok"] += 1
    admin = await metered.client()  # the admin's login, resumed here, replaces the first
    assert first.session is not None
    await admin.resume(first.session.token)
    expected["resume", "ok"] += 1
    await expect_error(stranger.call("whois", name="nobody"), "not_found")
    expected["whois", "not_found"] += 1
    assert not (await stranger.send_line("frobnicate now"))["ok"]
    assert not (await stranger.send_line("x" * 300))["ok"]  # never a label of its own
    expected["unknown", "unknown_command"] += 2
    await expect_error(alice.call("void", match=1, reason="no"), "forbidden")
    expected["void", "forbidden"] += 1

    result = await play(alice, bob)  # invite, join, resign: one rated backgammon match
    expected["invite", "ok"] += 1
    expected["join", "ok"] += 1
    expected["resign", "ok"] += 1
    assert metered.server is not None
    assert value(await scrape(port, node_name), "matchlobby_live_matches", status="playing") == 0

    event = await admin.call("event create", name="Club night", ladder="scrabble")
    for a, b in (("carol", "dave"), ("dave", "erin")):
        await admin.call("event result", new=True, event=event["id"], side_a=a, side_b=b,
                         score_a=400, score_b=350)
    await admin.call("event close", event=event["id"])
    expected["event create", "ok"] += 1
    expected["event result", "ok"] += 2
    expected["event close", "ok"] += 1
    await admin.call("void", match=result["match"], reason="played by mistake")
    expected["void", "ok"] += 1

    # a connection past its message rate: each frame refused is one refusal, not a command
    flood = await metered.client()
    # 80 at once: the burst of 60 passes, then at most 20 refusals in a row (a 21st would close)
    replies = await asyncio.gather(*(flood.send_line("unwatch backgammon") for _ in range(80)))
    refused = sum(1 for r in replies if not r["ok"])
    assert refused > 0 and all(r["error"]["code"] == "rate_limited" for r in replies if not r["ok"])
    expected["unwatch", "ok"] += len(replies) - refused

    commits_before = server.db.commits
    after = await scrape(port, node_name)
    commits_seen = server.db.commits

    commands = moved(before, after, "matchlobby_commands_total")
    assert commands == {(("command", c), ("outcome", o)): n for (c, o), n in expected.items()}
    latencies = moved(before, after, "matchlobby_command_seconds_count")
    per_command: Counter[str] = Counter()
    for (c, _), n in expected.items():
        per_command[c] += n
    assert latencies == {(("command", c),): n for c, n in per_command.items()}
    assert moved(before, after, "matchlobby_logins_total") == {
        (("method", "password"), ("outcome", "forbidden")): 1,
        (("method", "password"), ("outcome", "ok")): 1,
        (("method", "token"), ("outcome", "ok")): 1}
    # the match, and the event's two games at its close (scrabble rates an event whole)
    assert moved(before, after, "matchlobby_results_rated_total") == {
        (("ladder", "backgammon"),): 1, (("ladder", "scrabble"),): 2}
    assert moved(before, after, "matchlobby_event_close_seconds_count") == {
        (("ladder", "scrabble"),): 1}
    assert moved(before, after, "matchlobby_correction_seconds_count") == {(("kind", "void"),): 1}
    assert moved(before, after, "matchlobby_rate_limited_total") == {
        (("limit", "messages"),): refused}
    assert moved(before, after, "matchlobby_outgoing_drops_total") == {}
    assert moved(before, after, "matchlobby_replay_seconds_count") == {}
    # every batch the store committed, and no other, and each held at least one job
    commits = value(after, "matchlobby_commit_seconds_count")
    assert commits_before <= commits <= commits_seen
    assert value(after, "matchlobby_commit_batch_size_count") == commits
    assert value(after, "matchlobby_commit_batch_size_sum") >= commits
    # the gauges, read at the scrape: alice, bob and the admin online (the admin's first
    # connection was closed when its login was resumed on another)
    assert value(after, "matchlobby_players_online") == 3
    assert value(after, "matchlobby_live_matches", status="playing") == 0

    async def connections(n: int) -> None:
        while value(await scrape(port, node_name), "matchlobby_connections") != n:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(connections(len(metered.clients) - 1), 10)
    await stranger.close()
    await asyncio.wait_for(connections(len(metered.clients) - 2), 10)


async def test_one_live_match_is_a_live_match_until_it_ends(metered: LobbyServer,
                                                           node_name: str | None) -> None:
    assert metered.server is not None and metered.server.metrics_listener is not None
    port = metered.server.metrics_listener.port
    alice, bob = await metered.players("alice", "bob")
    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.next_push("invited")
    await bob.call("join", name="alice")
    assert value(await scrape(port, node_name), "matchlobby_live_matches", status="playing") == 1
    await bob.call("resign")
    assert value(await scrape(port, node_name), "matchlobby_live_matches", status="playing") == 0


async def test_each_node_counts_its_own_under_its_name(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    ports = []
    for node in nodes:
        named = node.configure
        assert named is not None

        def metered(config: Config, named: Callable[[Config], Config] = named) -> Config:
            return replace(named(config), metrics=MetricsSettings("127.0.0.1:0"))

        node.configure = metered
        server = await node.start()
        assert server.metrics_listener is not None
        ports.append(server.metrics_listener.port)
    a, b = nodes
    before = [await scrape(port, name) for port, name in zip(ports, ("node-a", "node-b"), strict=True)]
    await a.player("alice")
    await b.player("bob")
    await expect_error(b.login("alice", "not the password"), "forbidden")
    after = [await scrape(port, name) for port, name in zip(ports, ("node-a", "node-b"), strict=True)]
    assert moved(before[0], after[0], "matchlobby_commands_total") == {
        (("command", "register"), ("outcome", "ok")): 1}
    assert moved(before[1], after[1], "matchlobby_commands_total") == {
        (("command", "register"), ("outcome", "ok")): 1,
        (("command", "login"), ("outcome", "forbidden")): 1}


async def test_the_listener_answers_metrics_only(metered: LobbyServer) -> None:
    assert metered.server is not None and metered.server.metrics_listener is not None
    port = metered.server.metrics_listener.port
    for path in ("/", "/ws", "/metrics/x"):
        assert await asyncio.to_thread(refusal, port, path) == 404
    assert await asyncio.to_thread(refusal, port, "/metrics", "POST") == 405
    # a peer that sends nothing holds nothing up, and the server still stops at once
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert "matchlobby_connections" in await asyncio.to_thread(scrape_text, port)
    await metered.stop()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_metrics_are_off_unless_configured(lobby: LobbyServer) -> None:
    assert lobby.server is not None
    assert lobby.server.config.metrics.address is None
    assert lobby.server.metrics_listener is None
    # the lobby's own port does not serve them either
    assert await asyncio.to_thread(refusal, lobby.server.port, "/metrics") == 404
    # the counters still count (the listener is what is optional)
    c = await lobby.client()
    await c.call("help", command="help")
    counted = [(s.labels, s.value) for family in text_string_to_metric_families(
        lobby.server.lobby.metrics.exposition().decode()) for s in family.samples
        if s.name == "matchlobby_commands_total"]
    assert [(labels["command"], labels["outcome"], n) for labels, n in counted] == [
        ("help", "ok", 1)]


@pytest.mark.sqlite_only("the configuration file alone")
def test_metrics_address_in_the_configuration(tmp_path: Path, backend: str) -> None:
    config = tmp_path / "matchlobby.toml"
    config.write_text('[metrics]\naddress = "[::1]:9464"\n')
    assert load_config(config).metrics.host_port == ("::1", 9464)
    config.write_text('[metrics]\naddress = "0.0.0.0:9464"\n')
    assert load_config(config).metrics.host_port == ("0.0.0.0", 9464)
    assert load_config(None).metrics.address is None
    for bad in ('address = "9464"', 'address = "localhost:http"', 'address = 9464',
                'address = "::1:9464"', 'port = 9464'):
        config.write_text(f"[metrics]\n{bad}\n")
        with pytest.raises(ConfigError, match=r"\[metrics\]"):
            load_config(config)


@pytest.mark.sqlite_only("the command line's check of its option")
def test_a_bad_metrics_address_on_the_command_line_is_refused(
        tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from server.cli import main

    assert main(["serve", "--db", str(tmp_path / "x.db"), "--metrics-address", "nowhere"]) == 2
    assert "--metrics-address" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()



@pytest.mark.sqlite_only("the listener's own address, whatever the database")
async def test_a_metrics_address_taken_stops_serve_with_one_line(
        tmp_path: Path, backend: str) -> None:
    from testkit.cli import run_cli_async

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        done = await run_cli_async(["serve", "--db", str(tmp_path / "x.db"), "--port", "0",
                                    "--metrics-address", f"127.0.0.1:{port}"], tmp_path)
    finally:
        taken.close()
    assert done.returncode == 2, done.stderr
    said = [line for line in done.stderr.splitlines() if "cannot listen" in line]
    assert len(said) == 1 and said[0].startswith(
        f"matchlobby serve: cannot listen: metrics address 127.0.0.1:{port}: "), done.stderr
    assert "Errno" not in said[0]


@pytest.mark.sqlite_only("the metrics alone, whatever the database")
def test_the_command_tally_exposes_what_prometheus_clients_own_series_would(
        backend: str) -> None:
    """The commands' counts and seconds are kept in plain integers; ``prometheus_client``'s
    own ``Counter`` and ``Histogram``, fed the same answers, are the oracle for their text."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    from server.metrics import COMMAND_BUCKETS, Metrics

    answers = [("invite", "ok", s) for s in (0.0001, 0.0005, 0.0007, 0.001, 0.0025, 3.0, 20.0)]
    answers += [("login", "forbidden", 0.01), ("login", "ok", 0.02), ("resume", "ok", 0.001),
                ("no such", "unknown_command", 0.0), ("join", "Not-A-Code", 0.002),
                ("join", "Also bad", 0.004), ("invite", "rate_limited", 0.0001),
                ("join", "e2e_failure", 0.001), ("join", "x" * 41, 0.001)]
    metrics = Metrics()
    metrics.name_commands(["invite", "login", "resume", "join"])
    oracle = CollectorRegistry()
    logins = Counter("matchlobby_logins_total", "", ["method", "outcome"], registry=oracle)
    commands = Counter("matchlobby_commands_total", "", ["command", "outcome"], registry=oracle)
    seconds = Histogram("matchlobby_command_seconds", "", ["command"], buckets=COMMAND_BUCKETS,
                        registry=oracle)
    methods = {"login": "password", "resume": "token"}
    for name, outcome, took in answers:
        metrics.command(name, outcome, took)
        shown = name if name in metrics.known else "unknown"
        # a stable code: a lowercase letter, then at most 39 lowercase letters, digits or _
        word = outcome[:1].islower() and len(outcome) <= 40 and all(
            c.islower() or c.isdigit() or c == "_" for c in outcome)
        code = outcome if word else "other"
        commands.labels(shown, code).inc()
        seconds.labels(shown).observe(took)
        if name in methods:
            logins.labels(methods[name], code).inc()

    def samples(text: str) -> set[tuple[str, frozenset[tuple[str, str]], float]]:
        names = {"matchlobby_logins", "matchlobby_commands", "matchlobby_command_seconds"}
        return {(s.name, frozenset(s.labels.items()), s.value)
                for family in text_string_to_metric_families(text) if family.name in names
                for s in family.samples}

    expected = samples(generate_latest(oracle).decode())
    assert ("matchlobby_command_seconds_bucket",
            frozenset({("command", "invite"), ("le", "0.001")}), 5.0) in expected
    assert samples(metrics.exposition().decode()) == expected
