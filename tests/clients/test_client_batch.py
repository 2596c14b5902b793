"""``matchlobby client URL --batch``: a real process, one command per standard-input line.

Its output is checked line by line against text written out here from known
data: FIBS numbers computed from RATINGS.md §1 (:mod:`testkit.fibs`), ČAS and P4P
numbers from ``matchlobby rate`` on the same results, never from the replies
being rendered.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from testkit.cli import rate_file, run_batch, run_cli_async
from testkit.clients import start_match
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.fibs import FibsModel, fibs_changes
from testkit.probes import wait_until
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer
from testkit.terminal import help_rows
from testkit.zeta import LADDER, with_zeta


def columns(rows: list[list[str]], right: set[int]) -> list[str]:
    """Rows of cells padded to their column's width (``right``: right-aligned columns),
    two spaces apart, without trailing blanks."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in rows]


def row_of(rated: dict[str, Any], player: str) -> dict[str, Any]:
    return next(p for p in rated["players"] if p["player"] == player)


# ---- a player's session ----------------------------------------------------------------


async def test_a_players_session_line_by_line(lobby: LobbyServer, tmp_path: Path) -> None:
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    admin = await lobby.admin()
    fibs = FibsModel()
    m1 = await start_match(alice, bob, length=1)
    await bob.resign()
    fibs.play("alice", "bob", 1)
    m2 = await start_match(carol, alice, length=3)
    await alice.resign()
    fibs.play("carol", "alice", 3)
    scrabble = [f"Brno Open,{today()},alice,bob,420,380,,",
                f"Brno Open,{today()},bob,carol,400,390,,",
                f"Brno Open,{today()},carol,alice,350,351,,"]
    doubles = [f"League day,{today()},alice+bob,carol+dave,10,7,,"]
    for name, ladder, rows in (("Brno Open", "scrabble", scrabble),
                               ("League day", "foosball-doubles", doubles)):
        event = await admin.call("event create", name=name, ladder=ladder)
        await admin.call("event import", new=True, event=event["id"], csv=results_text(rows))
        await admin.call("event close", event=event["id"])
    cas = await rate_file("cas", scrabble, tmp_path / "cas-results.csv")
    p4p = await rate_file("p4p", doubles, tmp_path / "p4p-results.csv")
    history = (await admin.call("history", name="alice", ladder="backgammon"))["entries"]
    for c in (alice, bob, carol, dave):
        await c.close()

    async def only_admin_online() -> bool:
        return [p["player"] for p in (await admin.call("who"))["players"]] == [ADMIN]

    await wait_until(only_admin_online, what="the players' connections to close")

    done = await run_batch(lobby.url, [
        f"login alice {PASSWORD}", "whois alice", "ladder backgammon", "ladder backgammon 2 1",
        "rating alice", "history alice backgammon", "who", "ladders"])
    assert (done.returncode, done.stderr) == (0, "")
    out = done.lines

    a = fibs.players["alice"]
    s, d = row_of(cas, "alice"), row_of(p4p, "alice")
    assert a.experience == 4 and fibs.rank("alice") == 2
    # each ladder as the server describes it: its columns' labels, types and decimals
    fibs_text = f"rating {a.rating:.2f}   experience 4"
    cas_text = (f"strength {s['rating']}   paluba {s['paluba']}   dansa {s['dansa']}   "
                f"peklo {s['peklo']:.1f}")
    p4p_text = f"points {d['rating']}   class {d['class']}"
    room = max(len(fibs_text), len(cas_text), len(p4p_text))
    expected_whois = [
        "Information about alice:",
        "  Still logged in. Ready to play.",
        f"  backgammon        {fibs_text:{room}}   rank 2 of 3",
        f"  scrabble          {cas_text:{room}}   rank {s['rank']} of 3",
        f"  foosball-doubles  {p4p_text:{room}}   rank {d['rank']} of 4",
        "  Matches: 5 played, 0 dropped, 0 disputed.",
    ]
    ladder_rows = [["rank", "player", "rating", "experience", "matches", "active"]] + [
        [str(i), name, f"{fibs.players[name].rating:.2f}", str(fibs.players[name].experience),
         str(fibs.players[name].games), "yes"]
        for i, name in enumerate(fibs.ranking(), 1)]
    legend = "  experience: The lengths of every rated match added up."
    expected_ladder = ["backgammon (FIBS): 3 players",
                       *columns(ladder_rows, right={0, 2, 3, 4}), legend]
    expected_page = ["backgammon (FIBS): 3 players",
                     *columns([ladder_rows[0], ladder_rows[2]], right={0, 2, 3, 4}), legend]
    # one sentence a ladder: no header repeated inside a cell
    expected_rating = [
        "Ratings of alice:",
        f"  backgammon (FIBS): {fibs_text.replace('   ', ', ')}; rank 2 of 3; 2 matches.",
        f"  scrabble (ČAS): {cas_text.replace('   ', ', ')}; rank {s['rank']} of 3; "
        f"{s['games']} games.",
        f"  foosball-doubles (P4P): {p4p_text.replace('   ', ', ')}; rank {d['rank']} of 4; "
        "1 game.",
    ]
    (b1, a1), (b2, a2) = a.history
    stamp = [e["at"].replace("T", " ").removesuffix("Z") for e in history]
    expected_history = ["Rating history of alice:", *columns([
        ["when (UTC)", "ladder", "before", "after", "change", "what happened"],
        [stamp[0], "backgammon", f"{b1:.2f}", f"{a1:.2f}", f"{a1 - b1:+.2f}",
         f"won v bob, 1 point, match {m1}"],
        [stamp[1], "backgammon", f"{b2:.2f}", f"{a2:.2f}", f"{a2 - b2:+.2f}",
         f"lost v carol, 3 points, match {m2}"],
    ], right={2, 3, 4})]
    expected_who = [*columns([
        ["player", "status", "ratings"],
        ["alice", "ready", f"backgammon {a.rating:.2f}, scrabble {s['rating']}, "
                           f"foosball-doubles {d['rating']}"],
        [ADMIN, "ready", "-"],
    ], right=set()), "2 players, 0 spectators."]
    expected_ladders = columns([
        ["ladder", "system", "format", "live matches", "updated", "players"],
        ["backgammon", "FIBS", "singles", "yes", "after each match", "3"],
        ["scrabble", "ČAS", "singles", "no", "when an event closes", "3"],
        ["foosball-singles", "P4P", "singles", "no", "when an event closes", "0"],
        ["foosball-doubles", "P4P", "doubles", "no", "when an event closes", "4"],
    ], right={5})
    # alice's registration still holds its session
    expected = ["Logged in as alice.", "You have 1 other session open (other devices or "
                "browsers); 'logout --others' ends them.", *expected_whois, *expected_ladder,
                *expected_page, *expected_rating, *expected_history, *expected_who,
                *expected_ladders]
    for i, (got, want) in enumerate(zip(out, expected, strict=False)):
        assert got == want, f"line {i + 1}:\n got {got!r}\nwant {want!r}"
    assert len(out) == len(expected), out[len(expected):]


async def test_the_whois_block_has_the_issues_layout(lobby: LobbyServer) -> None:
    """The FIBS line with numbers computed by hand from RATINGS.md §1."""
    alice, bob = await lobby.players("alice", "bob")
    await start_match(alice, bob, length=1)
    await bob.resign()
    # two new players, equal ratings, a 1-point match: factor 4.99, +9.98 and -9.98
    assert [round(x, 10) for x in fibs_changes(1500.0, 0, 1500.0, 0, 1, True)] == [9.98, -9.98]
    await alice.close()
    done = await run_batch(lobby.url, ["whois alice", "whois bob"])
    assert done.returncode == 0
    last = (await bob.whois("alice")).last_login
    assert last is not None
    assert done.lines == [
        "Information about alice:",
        f"  Not logged in right now. Last login: {last[:10]} {last[11:19]} UTC.",
        "  backgammon  rating 1509.98   experience 1   rank 1 of 2",
        "  Matches: 1 played, 0 dropped, 0 disputed.",
        "Information about bob:",
        "  Still logged in. Ready to play.",
        "  backgammon  rating 1490.02   experience 1   rank 2 of 2",
        "  Matches: 1 played, 0 dropped, 0 disputed.",
    ]


async def test_a_system_no_client_knows_is_shown_by_its_description(db_path: Path) -> None:
    """A ladder whose system (Zeta, tests/kit/testkit/zeta.py) appears nowhere in clients/: the
    terminal shows it by the columns the server describes, numbers from RATINGS.md §1 (Zeta
    rates like FIBS) rounded as those columns say."""
    lobby = LobbyServer(db_path, configure=with_zeta)
    await lobby.start()
    try:
        alice, bob = await lobby.players("alice", "bob")
        fibs = FibsModel()
        await start_match(alice, bob, length=3, ladder=LADDER)
        await bob.resign()
        fibs.play("alice", "bob", 3)
        await start_match(bob, alice, length=1, ladder=LADDER)
        await alice.resign()
        fibs.play("bob", "alice", 1)
        done = await run_batch(lobby.url, [f"whois {name}" for name in fibs.ranking()] + [
            f"ladder {LADDER}", "history alice", "ladders"])
    finally:
        await lobby.aclose()
    assert (done.returncode, done.stderr) == (0, "")

    def phrase(name: str) -> str:
        r = fibs.players[name].rating
        return (f"score {int(r)}   elo {r:.1f}   ahead {'yes' if r > 1500 else 'no'}   "
                f"tier {'upper' if r >= 1500 else 'lower'}")

    first, second = fibs.ranking()
    whois = [line for line in done.lines if line.startswith(f"  {LADDER}  ")]
    assert whois == [f"  {LADDER}  {phrase(first)}   rank 1 of 2",
                     f"  {LADDER}  {phrase(second)}   rank 2 of 2"]
    table = [["rank", "player", "score", "elo", "ahead", "tier", "played", "active"]] + [
        [str(i), name, str(int(fibs.players[name].rating)), f"{fibs.players[name].rating:.1f}",
         "yes" if fibs.players[name].rating > 1500 else "no",
         "upper" if fibs.players[name].rating >= 1500 else "lower", "2", "yes"]
        for i, name in enumerate(fibs.ranking(), 1)]
    start = done.lines.index(f"{LADDER} (Zeta (made up)): 2 players")
    assert done.lines[start + 1:start + 7] == [
        *columns(table, right={0, 2, 3, 6}),
        "  score: Whole points of the rating.", "  elo: The rating with one place.",
        "  ahead: Above the start rating."]
    (b1, a1), (b2, a2) = fibs.players["alice"].history
    history = done.lines[start + 9:start + 11]
    assert [line.split()[2:6] for line in history] == [  # whole numbers: Score is an integer
        [LADDER, str(int(b1)), str(int(a1)), f"{int(a1) - int(b1):+d}"],
        [LADDER, str(int(b2)), str(int(a2)), f"{int(a2) - int(b2):+d}"]]
    assert done.lines[-1].split() == [LADDER, "Zeta", "(made", "up)", "singles", "yes",
                                      "after", "each", "match", "2"]


# ---- a director's session --------------------------------------------------------------


async def test_a_directors_session_line_by_line(lobby: LobbyServer, tmp_path: Path) -> None:
    day = today()
    imported = [f"Brno Open,{day},carol,alice,350,351,,", f"Brno Open,{day},alice,dave,300,0,,"
                "no:forfeit"]
    import_frame = json.dumps({"cmd": "event import", "args": {
        "event": 1, "csv": results_text(imported), "new": True}})
    done = await run_batch(lobby.url, [
        f"login {ADMIN} {ADMIN_PASSWORD}",
        f'event create "Brno Open" scrabble {day}',
        "event result 1 alice bob 420 380 --new",
        "event result 1 bob carol 400 390 --new",
        import_frame,
        "event show 1",
        "event close 1",
        "events",
        "events open",
    ])
    assert (done.returncode, done.stderr) == (0, "")
    rated = await rate_file("cas", [f"Brno Open,{day},alice,bob,420,380,,",
                                    f"Brno Open,{day},bob,carol,400,390,,", *imported],
                            tmp_path / "cas-results.csv")
    assert [p["player"] for p in rated["players"]] == ["alice", "bob", "carol"]
    after = {p["player"]: p["rating"] for p in rated["players"]}
    expected = [
        f"Logged in as {ADMIN} (admin).",
        f"Event 1: Brno Open (scrabble, {day}, open)",
        "Recorded in event 1 as match 1: alice 420, bob 380. New on this ladder: alice, bob "
        "(check the spelling: a misspelt name becomes a new player).",
        "Recorded in event 1 as match 2: bob 400, carol 390. New on this ladder: carol (check "
        "the spelling: a misspelt name becomes a new player).",
        "Imported 2 games into event 1 (matches 3 to 4). New on this ladder: dave (check the "
        "spelling: a misspelt name becomes a new player).",
        f"Event 1: Brno Open (scrabble, {day}, open)",
        "match  side a  side b  score    status",
        "    1  alice   bob     420:380  finished",
        "    2  bob     carol   400:390  finished",
        "    3  carol   alice   350:351  finished",
        "    4  alice   dave    300:0    unrated (forfeit)",
        "player  played  won  drawn  lost  points",
        "alice        2    2      0     0     2.0",
        "bob          2    1      0     1     1.0",
        "carol        2    0      0     2     0.0",
        f"Event 1: Brno Open (scrabble, {day}, closed)",
        f"  alice: - -> {after['alice']} (new), played",
        f"  bob: - -> {after['bob']} (new), played",
        f"  carol: - -> {after['carol']} (new), played",
        "id  name       ladder    date        status  games",
        f" 1  Brno Open  scrabble  {day}  closed      4",
        "No events.",
    ]
    assert done.lines == expected


# ---- pushes, JSON, refusals, the unreachable -------------------------------------------


async def test_pushes_follow_the_reply_that_caused_them(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    mid = await start_match(alice, bob, length=1)
    # Presence is pushed at most once a second: bob's start must have gone out before alice's
    # new login, which would be told it otherwise (true, but not caused by her commands).
    assert lobby.server is not None
    presence = lobby.server.lobby.presence
    await wait_until(lambda: not presence.pending, what="the presence push of the match start")
    await alice.close()  # the match goes on; alice comes back in the batch client
    done = await run_batch(lobby.url, [f"login alice {PASSWORD}", "resign"], "--pushes")
    assert (done.returncode, done.stderr) == (0, "")
    result = [f"alice resigned; bob wins match {mid} (backgammon, 1 point).",
              "  alice: 1500.00 -> 1490.02 (-9.98)",
              "  bob: 1500.00 -> 1509.98 (+9.98)"]
    win, loss = fibs_changes(1500.0, 0, 1500.0, 0, 1, True)
    at_stake = [f"  {name} (rating 1500.00): 50.0% to win; a win {win:+.2f}, a loss {loss:+.2f}."
                for name in ("alice", "bob")]
    assert done.lines == [  # the reply is the result: neither match_finished nor
        "Logged in as alice.",  # rating_changed repeats it
        f"You are in match {mid}: alice vs bob (backgammon, 1 point).",
        *at_stake,
        "You have 1 other session open (other devices or browsers); 'logout --others' ends them.",
        *result,
    ]
    # without --pushes, only the replies
    alice = await lobby.client()
    await alice.login("alice", PASSWORD)
    await start_match(bob, alice, length=1)
    await bob.close()
    quiet = await run_batch(lobby.url, [f"login bob {PASSWORD}", "resign"])
    assert quiet.lines[:2] == ["Logged in as bob.",
                               f"You are in match {mid + 1}: bob vs alice (backgammon, 1 point)."]
    assert quiet.lines[4].startswith("You have 1 other session open")
    assert quiet.lines[5] == f"bob resigned; alice wins match {mid + 1} (backgammon, 1 point)."
    assert len(quiet.lines) == 8 and not any(line.startswith("**") for line in quiet.lines)


async def test_json_prints_each_raw_reply_on_one_line(lobby: LobbyServer) -> None:
    bob = await lobby.player("bob")
    await bob.close()
    commands = ["ladders", "whois bob", "frobnicate", "ladder chess", 'help "event close"']
    done = await run_batch(lobby.url, commands, "--json")
    assert done.returncode == 1  # two were refused
    assert done.stderr == ""
    assert len(done.lines) == len(commands)
    same = await lobby.client()
    for line, command in zip(done.lines, commands, strict=True):
        assert line == json.dumps(json.loads(line), ensure_ascii=False)  # one compact object
        assert json.loads(line) == await same.send_line(command)
    assert json.loads(done.lines[2])["error"]["code"] == "unknown_command"
    assert json.loads(done.lines[3])["error"]["code"] == "not_found"


async def test_refusals_print_the_servers_message_and_exit_1(lobby: LobbyServer) -> None:
    commands = ["who", "frobnicate", "resign", "whois nobody", "event", "ladder backgammon x",
                "whois", "register alice abc", f"register alice {PASSWORD}", "ladders"]
    done = await run_batch(lobby.url, commands)
    assert done.returncode == 1
    assert done.stderr == ""
    probe = await lobby.client()
    messages = [(await probe.send_line(c)).get("error") for c in commands[1:8]]
    assert done.lines[0] == "Nobody is logged in (1 spectator)."
    assert done.lines[1:8] == [f"Error ({e['code']}): {e['message']}" for e in messages if e]
    assert done.lines[1:3] == ["Error (unknown_command): Unknown command 'frobnicate'; try 'help'.",
                               "Error (not_logged_in): 'resign' needs you to log in first."]
    assert done.lines[3] == "Error (not_found): No player named 'nobody'."
    assert done.lines[8] == (  # later commands still ran
        "Welcome, alice: your account is made and you are logged in.")
    assert done.lines[9].startswith("ladder ")
    assert len(done.lines) == 14


async def test_comments_blank_lines_and_quit(lobby: LobbyServer) -> None:
    done = await run_batch(lobby.url, ["# set up", "", "   ", "who", "quit", "frobnicate"])
    assert (done.returncode, done.lines, done.stderr) == (
        0, ["Nobody is logged in (1 spectator)."], "")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_server_exits_2_with_a_message(lobby: LobbyServer) -> None:
    port = _closed_port()
    for url in (f"ws://127.0.0.1:{port}/ws",  # nobody listens
                f"ws://127.0.0.1:{lobby.port}/nowhere",  # a server, but no WebSocket there
                f"http://127.0.0.1:{lobby.port}/ws"):  # not a WebSocket URL
        done = await run_batch(url, ["who"])
        assert done.returncode == 2, (url, done)
        assert done.stdout == ""
        (message,) = done.stderr.splitlines()
        assert message.startswith(f"matchlobby client: cannot connect to {url}: "), message
    done = await run_cli_async(["client", f"ws://127.0.0.1:{port}/ws", "--batch", "--json"],
                                stdin="who\n")
    assert done.returncode == 2 and "Traceback" not in done.stderr


async def test_help_into_a_pipe_is_wrapped_to_80_columns(lobby: LobbyServer) -> None:
    served = (await (await lobby.client()).call("help"))["commands"]
    done = await run_batch(lobby.url, ["help", "help event result"])
    assert (done.returncode, done.stderr) == (0, "")
    assert max(len(line) for line in done.lines) <= 80, done.lines
    one = next(c for c in served if c["command"] == "event result")
    # the one command's help: its first line is the last one not indented
    start = max(i for i, line in enumerate(done.lines) if not line.startswith("  "))
    assert help_rows(done.lines[:start]) == [[c["usage"], c["who"], c["summary"]]
                                             for c in served]
    assert " ".join(line.strip() for line in done.lines[start:]) == (
        f"{one['usage']} {one['summary']} For: {one['who']}")


async def test_a_script_resuming_a_saved_token_does_not_end_it(lobby: LobbyServer) -> None:
    """A login the script made is logged out at its end; a token it resumed was made
    elsewhere (an interactive client, a saved session) and stays."""
    alice = await lobby.player("alice")
    assert alice.session is not None
    token = alice.session.token
    await alice.close()
    done = await run_batch(lobby.url, [f"resume {token}", "whois alice"])
    assert done.returncode == 0, done.stderr
    again = await lobby.client()
    reply = await again.request("resume", {"token": token})
    assert reply.get("ok"), reply
