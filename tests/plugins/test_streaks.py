"""The streaks plugin (tests/plugins/streaks), an outside package, in a real lobby.

It is found through its entry point like any installed plugin, imports only
``server.api``, keeps its own table (made and migrated by the lobby) and adds
the command ``streak NAME``. Each test runs a real server on a free port over
a real SQLite file and asks ``streak`` what the matches, events and
corrections made of the players' streaks.
"""

from __future__ import annotations

from pathlib import Path

from testkit.clients import expect_error, start_match
from testkit.db import columns, execute, sql
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from server.api.registry import plugin_factories

PLUGIN = Path(__file__).resolve().parent / "streaks"


async def streaks(client: LobbyClient, name: str) -> dict[str, tuple[int, int]]:
    """``streak NAME`` as {ladder: (current, best)}."""
    data = await client.call("streak", name=name)
    assert data["player"].casefold() == name.casefold()
    return {s["ladder"]: (s["current"], s["best"]) for s in data["streaks"]}


async def beat(winner: LobbyClient, loser: LobbyClient, length: int | str = 1) -> int:
    """A backgammon match the loser resigns; returns its id."""
    mid = await start_match(winner, loser, length=length)
    await loser.resign()
    return mid


# ---- found, and built on the API alone ------------------------------------------------------


def test_the_plugin_is_an_installed_package_found_by_its_entry_point() -> None:
    factory = plugin_factories()["streaks"]
    assert factory.__module__ == "matchlobby_streaks.plugin"
    source = Path(__import__(factory.__module__, fromlist=["_"]).__file__ or "")
    assert source.is_relative_to(PLUGIN), source  # its own package, not a module of server/




# ---- the command ----------------------------------------------------------------------------


async def test_help_lists_streak_with_its_summary_and_role(lobby: LobbyServer) -> None:
    guest = await lobby.client()
    listed = {c["command"]: c for c in (await guest.call("help"))["commands"]}
    assert listed["streak"] == {"command": "streak", "usage": "streak NAME", "who": "anyone",
                                "summary": "A player's current and best winning streak on each "
                                           "ladder they play."}
    assert await guest.call("help", command="streak") == listed["streak"]


async def test_streak_refuses_what_it_cannot_answer(lobby: LobbyServer) -> None:
    guest = await lobby.client()
    await expect_error(guest.call("streak", name="nobody"), "not_found")
    await expect_error(guest.call("streak", name="bad name!"), "bad_request")
    await expect_error(guest.call("streak"), "bad_request")
    assert (await guest.send_line("streak"))["error"]["code"] == "bad_request"
    alice = await lobby.player("alice")
    assert await alice.call("streak", name="ALICE") == {"player": "alice", "streaks": []}


# ---- live matches -----------------------------------------------------------------------------


async def test_live_wins_make_a_streak_and_a_loss_ends_it(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    guest = await lobby.client()
    await beat(alice, bob)
    await beat(alice, carol, length=3)
    await beat(alice, bob)
    assert await streaks(guest, "alice") == {"backgammon": (3, 3)}
    assert await streaks(guest, "bob") == {"backgammon": (0, 0)}
    # an unlimited match is never rated: it neither extends nor ends a streak
    await beat(bob, alice, length="unlimited")
    assert await streaks(guest, "alice") == {"backgammon": (3, 3)}
    assert await streaks(guest, "bob") == {"backgammon": (0, 0)}
    await beat(bob, alice)
    await beat(alice, carol)
    assert await streaks(guest, "alice") == {"backgammon": (1, 3)}
    assert await streaks(guest, "bob") == {"backgammon": (1, 1)}
    assert await streaks(guest, "carol") == {"backgammon": (0, 0)}
    # the plain line gives the same answer
    line = await guest.send_line("streak Alice")
    assert line["ok"] and line["data"] == {
        "player": "alice", "streaks": [{"ladder": "backgammon", "current": 1, "best": 3}]}


# ---- events: rated at close, draws, unrated games, doubles ----------------------------------


async def test_a_closed_event_counts_its_games_in_order(lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    guest = await lobby.client()
    eid = (await admin.call("event create", name="Brno Open", ladder="scrabble"))["id"]
    await admin.call("event import", new=True, event=eid, csv=results_text([
        f"Brno Open,{today()},alice,bob,400,300,,",
        f"Brno Open,{today()},alice,carol,380,300,,",
        f"Brno Open,{today()},bob,alice,500,100,,no:forfeit",  # unrated: changes nothing
        f"Brno Open,{today()},alice,dave,410,390,,",
        f"Brno Open,{today()},alice,dave,350,350,,",  # a draw ends a streak
        f"Brno Open,{today()},alice,bob,390,380,,",
        f"Brno Open,{today()},carol,bob,300,200,,",
    ]))
    # rated when the event closes, not before
    assert await streaks(guest, "alice") == {}
    await admin.call("event close", event=eid)
    assert await streaks(guest, "alice") == {"scrabble": (1, 3)}
    assert await streaks(guest, "bob") == {"scrabble": (0, 0)}
    assert await streaks(guest, "carol") == {"scrabble": (1, 1)}
    assert await streaks(guest, "dave") == {"scrabble": (0, 0)}
    # a doubles game: both players of a side share its result
    eid = (await admin.call("event create", name="League day", ladder="foosball-doubles"))["id"]
    await admin.call("event result", new=True, event=eid, side_a="alice+bob", side_b="carol+dave",
                     score_a=10, score_b=7)
    await admin.call("event close", event=eid)
    assert await streaks(guest, "bob") == {"scrabble": (0, 0), "foosball-doubles": (1, 1)}
    assert await streaks(guest, "dave") == {"scrabble": (0, 0), "foosball-doubles": (0, 0)}


# ---- corrections ----------------------------------------------------------------------------


async def test_a_void_and_an_adjudication_put_the_streaks_right(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    admin = await lobby.admin()
    m1 = await beat(alice, bob)
    m2 = await beat(bob, alice)
    m3 = await beat(alice, bob)
    m4 = await beat(alice, bob)
    assert await streaks(admin, "alice") == {"backgammon": (2, 2)}
    await admin.call("void", match=m2, reason="wrong players")  # alice: W W W
    assert await streaks(admin, "alice") == {"backgammon": (3, 3)}
    assert await streaks(admin, "bob") == {"backgammon": (0, 0)}
    await admin.adjudicate(m3, "bob")  # alice: W L W
    assert await streaks(admin, "alice") == {"backgammon": (1, 1)}
    assert await streaks(admin, "bob") == {"backgammon": (0, 1)}
    await admin.call("void", match=m4, reason="entered twice")  # alice: W L
    assert await streaks(admin, "alice") == {"backgammon": (0, 1)}
    assert await streaks(admin, "bob") == {"backgammon": (1, 1)}
    await admin.call("void", match=m1, reason="never played")  # alice: L
    assert await streaks(admin, "alice") == {"backgammon": (0, 0)}
    # and the next match carries on from the corrected streaks
    await beat(bob, alice)
    assert await streaks(admin, "bob") == {"backgammon": (2, 2)}


async def test_a_void_in_a_closed_event_recounts_the_ladder(lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    eid = (await admin.call("event create", name="Spring", ladder="scrabble"))["id"]
    games = []
    for a, b in (("alice", "bob"), ("carol", "alice"), ("alice", "bob"), ("alice", "carol")):
        games.append((await admin.call("event result", new=True, event=eid, side_a=a, side_b=b,
                                       score_a=400, score_b=300))["match"])
    await admin.call("event close", event=eid)
    assert await streaks(admin, "alice") == {"scrabble": (2, 2)}
    await admin.call("void", match=games[1], reason="carol was not there")
    assert await streaks(admin, "alice") == {"scrabble": (3, 3)}
    assert await streaks(admin, "carol") == {"scrabble": (0, 0)}


# ---- its table: made by the lobby, kept across a restart, filled from an existing log -------


async def test_its_table_is_in_the_database_and_a_restart_keeps_it(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    await beat(alice, bob)
    await beat(alice, bob)
    db = lobby.db
    assert sql(db, "SELECT version FROM plugin_schemas WHERE name = 'streaks'") == [(1,)]
    assert columns(db, "streaks") == ["player_id", "ladder", "current", "best"]
    assert sorted(sql(db, "SELECT p.name, s.ladder, s.current, s.best FROM streaks s "
                          "JOIN players p ON p.id = s.player_id")) == [
        ("alice", "backgammon", 2, 2), ("bob", "backgammon", 0, 0)]
    await lobby.stop()
    await lobby.start()
    alice, bob = await lobby.login("alice"), await lobby.login("bob")
    assert await streaks(bob, "alice") == {"backgammon": (2, 2)}
    await beat(alice, bob)
    assert await streaks(bob, "alice") == {"backgammon": (3, 3)}


async def test_installed_on_a_lobby_with_a_history_it_counts_that_history(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    admin = await lobby.admin()
    await beat(bob, alice)
    await beat(alice, bob)
    await beat(alice, bob)
    eid = (await admin.call("event create", name="Open", ladder="foosball-singles"))["id"]
    await admin.call("event result", new=True, event=eid, side_a="bob", side_b="alice", score_a=10,
                     score_b=3)
    await admin.call("event close", event=eid)
    await lobby.stop()
    # the database as a lobby without the plugin leaves it: no table, no schema record
    execute(lobby.db, "DROP TABLE streaks")
    execute(lobby.db, "DELETE FROM plugin_schemas WHERE name = 'streaks'")
    assert columns(lobby.db, "streaks") == []
    await lobby.start()
    guest = await lobby.client()
    assert await streaks(guest, "alice") == {"backgammon": (2, 2), "foosball-singles": (0, 0)}
    assert await streaks(guest, "bob") == {"backgammon": (0, 1), "foosball-singles": (1, 1)}
