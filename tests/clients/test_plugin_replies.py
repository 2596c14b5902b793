"""A plugin's command in the terminal client: its reply shown whatever its shape, nothing dropped.

The client has no words of its own for the test plugins' commands (``h2h`` of headtohead,
``streak`` of streaks): ``matchlobby client --batch`` runs them against a real server on a free
port, and the lines it prints hold every value of the reply, nested objects as indented lines
and lists of objects as tables.
"""

from __future__ import annotations

import re

from testkit.cli import run_batch
from testkit.clients import start_match
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients.any_shape import shaped


async def test_h2h_and_streak_print_every_value(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    admin = await lobby.admin()
    for winner, loser in ((alice, bob), (alice, bob), (bob, alice)):
        await start_match(winner, loser)
        await loser.resign()
    eid = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
    await admin.call("event import", new=True, event=eid, csv=results_text([
        f"Open,{today()},bob,alice,400,300,,", f"Open,{today()},alice,bob,350,350,,"]))
    await admin.call("event close", event=eid)
    done = await run_batch(lobby.url, ["h2h alice bob", "streak bob", "h2h alice alice"])
    assert done.returncode == 1  # the last one is refused
    assert done.lines == [
        "players: alice, bob",
        "total:",
        "  alice: 2, bob: 2",
        "ladders:",
        "  ladder      wins alice  wins bob  draws  last",
        f"  backgammon           2         1      0  {today()}",
        f"  scrabble             0         1      1  {today()}",
        "player: bob",
        "streaks:",
        "  ladder      current  best",
        "  backgammon        1     1",
        "  scrabble          0     1",
        "Error (bad_request): alice has no record against themselves: name two players.",
    ]


def test_any_shape_drops_nothing() -> None:
    """Rows of unlike keys, deeper nesting, empty lists and plain lists: each value shown."""
    assert shaped({"n": 3, "ok": True, "none": None, "empty": [], "tags": ["a", "b"],
                   "rows": [{"x": 1}, {"y": {"z": [1, 2]}}]}).splitlines() == [
        "n: 3, ok: yes, none: -",
        "empty: none",
        "tags: a, b",
        "rows:",
        "  - x: 1",
        "  - y:",
        "      z: 1, 2",
    ]
    assert shaped([{"a": 1, "b": "long text"}, {"a": 22, "b": "x"}]).splitlines() == [
        " a  b", " 1  long text", "22  x"]
    assert shaped("plain") == "plain"


async def test_evaluate_prints_the_command_lines_table(lobby: LobbyServer) -> None:
    """``evaluate LADDER`` reads as ``matchlobby evaluate --ladder``'s table (a row a system,
    four decimals), under a line saying how many games were scored, not as a dump of the
    calibration bins."""
    alice, bob = await lobby.players("alice", "bob")
    for winner, loser in ((alice, bob), (alice, bob), (bob, alice)):
        await start_match(winner, loser, 3)
        await loser.resign()
    report = await alice.call("evaluate", ladder="backgammon")
    done = await run_batch(lobby.url, ["evaluate backgammon"])
    assert done.returncode == 0, done.stderr
    head, columns, *rows, foot = done.lines
    assert head == ("How well FIBS has predicted backgammon: 3 games scored, "
                    "0 of them after every player's first 20 (20+).")
    assert re.split(r"\s{2,}", columns) == [
        "system", "variant", "games", "log-loss", "Brier", "accuracy", "games 20+",
        "log-loss 20+", "Brier 20+", "accuracy 20+"]
    assert [r.split() for r in rows] == [
        [s["system"], "-", "3", f"{s['log_loss']:.4f}", f"{s['brier']:.4f}",
         f"{s['accuracy']:.4f}", "0", "-", "-", "-"] for s in report["systems"]]
    assert [s["system"] for s in report["systems"]] == ["fibs", "baseline", "win_rate"]
    assert foot.startswith("Lower log-loss and Brier are better")
