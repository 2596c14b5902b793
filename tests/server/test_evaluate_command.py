"""The lobby command ``evaluate LADDER`` on a real server: its report is what
``ratings_plugin.evaluation.evaluate`` makes of the same committed log, and it follows the log
(a new match, a void) although the lobby keeps it between changes."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from testkit.cli import run_cli_async
from testkit.clients import RecordingClient, expect_error, play, start_match
from testkit.constants import PLAY_FREELY
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from ratings_plugin.evaluation import evaluate
from server.config import Config, Limits, load_config
from server.limits import client_key
from server.lobby.reads import READ_PER_UNIT, ROWS_PER_UNIT
from server.store.backends import open_store


async def expected(lobby: LobbyServer, ladder: str) -> dict[str, Any]:
    """The report computed apart, from the log as a ``matchlobby`` sub-command reads it."""
    config = next(x for x in lobby.config().ladders if x.name == ladder)
    store = await open_store(str(lobby.db), [])
    try:
        units = await store.log.units(ladder)
    finally:
        await store.close()
    return {"ladder": ladder, "system": config.system.name, **evaluate([({}, config)], units)}


async def test_evaluate_reports_the_ladders_log_and_follows_it(lobby: LobbyServer) -> None:
    """A FIBS ladder of live matches: the report from the log's plain rows, as the books'."""
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    guest = await lobby.client()
    await expect_error(guest.call("evaluate", ladder="chess"), "not_found")
    empty = await guest.call("evaluate", ladder="backgammon")
    assert [(r["system"], r["games"], r["log_loss"]) for r in empty["systems"]] == [
        ("fibs", 0, None), ("baseline", 0, None), ("win_rate", 0, None)]

    for winner, loser, length in [(alice, bob, 5), (alice, carol, 3), (bob, carol, 7),
                                  (alice, bob, 1), (carol, bob, 5)]:
        await play(winner, loser, length)
    first = await guest.call("evaluate", ladder="BACKGAMMON")
    assert first == await expected(lobby, "backgammon")
    rows = {r["system"]: r for r in first["systems"]}
    assert [r["system"] for r in first["systems"]] == ["fibs", "baseline", "win_rate"]
    assert rows["fibs"]["games"] == 5
    assert math.isclose(rows["baseline"]["log_loss"], math.log(2))
    assert rows["fibs"]["log_loss"] != rows["baseline"]["log_loss"]
    assert await bob.call("evaluate", ladder="backgammon") == first  # asked again: the same

    await play(bob, alice, 3)
    second = await guest.call("evaluate", ladder="backgammon")
    assert second == await expected(lobby, "backgammon")
    assert second["systems"][0]["games"] == 6
    assert second["systems"][0]["log_loss"] != first["systems"][0]["log_loss"]

    # an unlimited match is not scored; a void takes a scored match out of the log
    mid = await start_match(carol, alice, "unlimited")
    await alice.call("resign")
    assert (await guest.call("evaluate", ladder="backgammon")) == second
    admin = await lobby.admin()
    await admin.call("void", match=mid - 1, reason="wrong players")
    third = await guest.call("evaluate", ladder="backgammon")
    assert third == await expected(lobby, "backgammon")
    assert third["systems"][0]["games"] == 5


async def test_a_log_the_ladders_options_now_refuse_is_a_conflict(db_path: Path,
                                                                  tmp_path: Path) -> None:
    """A singles P4P ladder configured as doubles after its first event: its system refuses
    the log's games, and ``evaluate`` says so instead of failing."""
    configs = {"now": '[[ladders]]\nname = "league"\nsystem = "p4p"\n'}
    path = tmp_path / "ladders.toml"

    def ladders(config: Config) -> Config:
        path.write_text(configs["now"], encoding="utf-8")
        return replace(config, ladders=load_config(path).ladders)

    lobby = LobbyServer(db_path, configure=ladders)
    await lobby.start()
    try:
        admin = await lobby.admin()
        event = (await admin.call("event create", name="Night", ladder="league"))["id"]
        await admin.call("event import", new=True, event=event,
                         csv=results_text([f"Night,{today()},ann,bob,10,5,,"]))
        await admin.call("event close", event=event)
        closed = await admin.call("evaluate", ladder="league")  # an event's unit: the books
        assert closed == await expected(lobby, "league")
        assert closed["systems"][0]["games"] == 1
        configs["now"] += 'format = "doubles"\n'
        await lobby.restart()
        guest = await lobby.client()
        refused = await expect_error(guest.call("evaluate", ladder="league"), "conflict")
        assert refused.message.startswith("P4P cannot rate the log of league as it is "
                                          "configured now: ")
        assert (await guest.call("ladders"))["ladders"][0]["format"] == "doubles"  # still up
    finally:
        await lobby.aclose()


async def charged(lobby: LobbyServer, asker: RecordingClient, ladder: str
                  ) -> tuple[dict[str, Any], int]:
    """``evaluate ladder``'s reply and the rows it charged the asker's address for besides
    its reply's (the budget refills a unit in 30 years: what it lost is what the ask cost)."""
    assert lobby.server is not None
    reads = lobby.server.lobby.reads
    key = client_key("127.0.0.1")
    before = reads._buckets[key].tokens if key in reads._buckets else reads.burst
    reply = await asker.call("evaluate", ladder=ladder)
    cost = before - reads._buckets[key].tokens
    return reply, round((cost - 1.0 - len(reply["systems"]) / ROWS_PER_UNIT) * READ_PER_UNIT)


async def players_and_games(lobby: LobbyServer, ladder: str) -> tuple[int, int]:
    store = await open_store(str(lobby.db), [])
    try:
        players = await store.fetchone("SELECT count(*) FROM players")
        games = sum(len(u.games) for u in await store.log.units(ladder))
    finally:
        await store.close()
    assert players is not None
    return players[0], games


async def test_a_new_match_is_read_alone_and_a_correction_starts_over(db_path: Path) -> None:
    """The ladder's evaluation is kept between asks: the ask after a new match reads and
    charges that match alone, and answers exactly what a computation from the whole log
    gives; after a void it reads the whole log again."""
    limits = Limits(**PLAY_FREELY, read_units_per_second=1e-9, read_units_burst=1e9)
    lobby = LobbyServer(db_path, limits=limits)
    await lobby.start()
    try:
        alice, bob, carol = await lobby.players("alice", "bob", "carol")
        guest = await lobby.client()
        for winner, loser, length in [(alice, bob, 5), (bob, carol, 3), (carol, alice, 7)]:
            await play(winner, loser, length)
        first, read = await charged(lobby, guest, "backgammon")
        players, games = await players_and_games(lobby, "backgammon")
        assert first == await expected(lobby, "backgammon")
        assert games == 3 and read == players + games  # every player's id and every match

        dave = await lobby.player("dave")
        await play(dave, alice, 3)
        second, read = await charged(lobby, guest, "backgammon")
        assert second == await expected(lobby, "backgammon")
        assert second["systems"][0]["games"] == 4
        assert read == 1 + 1  # the new player and the new match
        assert await charged(lobby, guest, "backgammon") == (second, 0)
        # the command line reads the log the same way, on either backend
        done = await run_cli_async(["evaluate", "--ladder", "backgammon", "--db", str(lobby.db),
                                    "--format", "json"], db_path.parent)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["systems"] == second["systems"]

        # an unlimited match: unrated, so no unit of the log, nothing read or scored
        mid = await start_match(carol, bob, "unlimited")
        await bob.call("resign")
        third, read = await charged(lobby, guest, "backgammon")
        assert third == await expected(lobby, "backgammon") == second and read == 0
        await play(bob, dave, 1)
        fourth, read = await charged(lobby, guest, "backgammon")
        assert fourth == await expected(lobby, "backgammon")
        assert fourth["systems"][0]["games"] == 5 and read == 1

        admin = await lobby.admin()
        await admin.call("void", match=mid - 1, reason="wrong players")
        fifth, read = await charged(lobby, guest, "backgammon")
        players, games = await players_and_games(lobby, "backgammon")
        assert fifth == await expected(lobby, "backgammon")
        assert fifth["systems"][0]["games"] == 4
        assert read >= games + 1  # the whole log again (the void changed the past)
    finally:
        await lobby.aclose()


async def test_a_ladder_evaluated_through_its_books_is_charged_for_its_games(
        db_path: Path) -> None:
    """A ČAS ladder (no plain rows) reads its units, not the players' ids: the first ask costs
    its games, the ask after one more event that event's games."""
    limits = Limits(**PLAY_FREELY, read_units_per_second=1e-9, read_units_burst=1e9)
    lobby = LobbyServer(db_path, limits=limits)
    await lobby.start()
    try:
        admin = await lobby.admin()
        await lobby.players("alice", "bob", "carol", "dave")  # players of no game of it
        guest = await lobby.client()
        days = {"Day 1": [("ann", "ben", 420, 380), ("cid", "dan", 390, 390)],
                "Day 2": [("ann", "cid", 400, 350)]}
        reads = []
        for day, games in days.items():
            event = (await admin.call("event create", name=day, ladder="scrabble"))["id"]
            these = [f"{day},{today()},{a},{b},{sa},{sb},," for a, b, sa, sb in games]
            await admin.call("event import", new=True, event=event, csv=results_text(these))
            await admin.call("event close", event=event)
            report, read = await charged(lobby, guest, "scrabble")
            assert report == await expected(lobby, "scrabble")
            reads.append(read)
        assert reads == [2, 1]
    finally:
        await lobby.aclose()
