"""The terminal client on a pseudo-terminal against a real server: what a player and a director
read, sentence for sentence.

Expected figures are worked out here: FIBS stakes from RATINGS.md §1 (:mod:`testkit.fibs`),
ČAS strengths from ``matchlobby rate`` on the same results; never taken from the replies being
printed.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from testkit.cli import cli_env, matchlobby_command, rate_file
from testkit.clients import play
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.fibs import FibsModel, fibs_chance, fibs_changes
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer
from testkit.terminal import Terminal, help_rows

from server.commands import COMMANDS


def env(home: Path, *more: tuple[str, str]) -> dict[str, str]:
    """As in test_client_interactive: the history file in the test's folder, no cursor
    position requests (a bare pseudo-terminal does not answer them)."""
    return cli_env(HOME=str(home), TERM="xterm-256color", NO_COLOR="1",
                   PROMPT_TOOLKIT_NO_CPR="1", **dict(more))


@pytest.fixture
async def spawn(lobby: LobbyServer, tmp_path: Path) -> AsyncIterator[Spawner]:
    spawner = Spawner(lobby, tmp_path)
    try:
        yield spawner
    finally:
        for term in spawner.terms:
            await term.aclose()
        for term in spawner.terms:
            assert "Traceback" not in term.raw.decode("utf-8", "replace")


class Spawner:
    """Terminal clients of one test, logged in."""

    def __init__(self, lobby: LobbyServer, home: Path) -> None:
        self.lobby, self.home = lobby, home
        self.terms: list[Terminal] = []

    async def __call__(self, name: str, password: str = PASSWORD, *flags: str,
                       columns: int = 200, extra_env: tuple[tuple[str, str], ...] = ()
                       ) -> Terminal:
        term = await Terminal.spawn([*matchlobby_command(), "client", self.lobby.url, *flags],
                                    env(self.home, *extra_env), columns=columns)
        self.terms.append(term)
        await term.expect(r"matchlobby>")
        term.type(f"login {name} {password}\r")
        await term.expect(rf"{name}>")
        return term


async def says(term: Terminal, *lines: str) -> str:
    """Wait for exactly these lines, one after the other, in what the terminal shows next (the
    first from where prompt_toolkit's cursor movements leave it, not from a line's start)."""
    return await term.expect(re.escape("\n".join(lines) + "\n"))


async def run(term: Terminal, line: str, *reply: str) -> str:
    """Type a command and wait for its reply, line for line."""
    term.type(line + "\r")
    return await says(term, *reply)


def stake_line(name: str, rating: float, chance: float, win: float, loss: float) -> str:
    return (f"  {name} (rating {rating:.2f}): {chance * 100:.1f}% to win; a win {win:+.2f}, "
            f"a loss {loss:+.2f}.")


def fibs_stake(fibs: FibsModel, a: str, b: str, n: int) -> list[str]:
    """The two lines of a FIBS stake of A (first) against B in a match to ``n``."""
    pa, pb = fibs.get(a), fibs.get(b)
    a_win, b_loss = fibs_changes(pa.rating, pa.experience, pb.rating, pb.experience, n, True)
    a_loss, b_win = fibs_changes(pa.rating, pa.experience, pb.rating, pb.experience, n, False)
    return [stake_line(a, pa.rating, fibs_chance(pa.rating, pb.rating, n), a_win, a_loss),
            stake_line(b, pb.rating, fibs_chance(pb.rating, pa.rating, n), b_win, b_loss)]


def clock(stamp: str) -> str:
    return stamp.split("T")[1].rstrip("Z") + " UTC"


# ---- help --------------------------------------------------------------------------------


async def test_help_of_multi_word_commands_and_the_listing_fits_80_columns(
        lobby: LobbyServer, spawn: Spawner) -> None:
    await lobby.player("alice")
    term = await spawn("alice", columns=80)
    summary = textwrap.wrap(COMMANDS["report win"].summary, 78)
    assert "SCORE_A is yours and SCORE_B your opponent's" in COMMANDS["report win"].summary
    await run(term, "help report win", "report win [SCORE_A] [SCORE_B]",
              *(f"  {line}" for line in summary), "  For: player")
    await run(term, "help   Event   CLOSE", "event close EVENT",
              "  Close the event and rate its games; pushes the new ladder.", "  For: admin")
    await run(term, "help frobnicate now",
              "Error (unknown_command): Unknown command 'frobnicate now'; try 'help'.")

    term.type("help\r")
    listing = (await term.expect(r"\nabort +player +Propose.*\n(?:   .*\n)*"))
    lines = listing[listing.index("usage"):].rstrip("\n").splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    rows = help_rows(lines)
    what_at = lines[0].index("what")
    listed = {usage: (who, what) for usage, who, what in rows}
    for spec in list(COMMANDS.values())[:list(COMMANDS).index("abort") + 1]:
        assert listed[spec.usage] == (spec.role, spec.summary), spec.name
    assert any(not line[:what_at].strip() for line in lines)  # some summary did wrap


async def test_help_at_100_columns_balances_usage_and_summary(lobby: LobbyServer,
                                                               spawn: Spawner) -> None:
    """The usage column is no wider than it needs for the listing to take the fewest lines:
    the long usages wrap, not most of the summaries."""
    alice = await lobby.player("alice")
    served = (await alice.call("help"))["commands"]
    term = await spawn("alice", columns=100)
    term.type("help\r")
    listing = await term.expect(r"usage +who +what\n(?:.*\n)*?alice>")
    lines = listing[listing.index("usage"):].splitlines()[:-1]
    assert max(len(line) for line in lines) <= 100, lines
    rows = help_rows(lines)
    assert rows == [[c["usage"], c["who"], c["summary"]] for c in served]
    usage_w = lines[0].index("who") - 2
    assert usage_w < max(len(c["usage"]) for c in served)  # the longest usages wrap
    # at most one wrapped line for every second command: the summaries have the room
    assert len(lines) - 1 <= 1.5 * len(served), "\n".join(lines)


# ---- invitations: the stake, the bell, the listing, withdrawing ----------------------------


async def test_an_invitation_rings_shows_the_stake_and_can_be_listed_and_withdrawn(
        lobby: LobbyServer, spawn: Spawner) -> None:
    alice, bob = await lobby.players("alice", "bob")
    fibs = FibsModel()
    await play(alice, bob, length=1)
    fibs.play("alice", "bob", 1)
    await alice.close()
    term = await spawn("alice")
    assert term.raw.count(b"\x07") == 0

    invited = await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await says(term, f"** bob invites you to a 3-point backgammon match, open until "
                     f"{clock(invited['expires_at'])}. Type 'join bob' or 'decline bob'.",
               *fibs_stake(fibs, "bob", "alice", 3))
    assert term.raw.count(b"\x07") == 1  # the bell, once
    assert term.raw.index(b"\x07") < term.raw.index(b"** bob invites")

    await run(term, "stake bob backgammon 5",
              "At stake in a 5-point backgammon match of alice against bob:",
              *fibs_stake(fibs, "alice", "bob", 5))
    await run(term, "invitations", "You have sent no invitations.", "Invitations you received:",
              f"  from bob: a 3-point backgammon match, open until "
              f"{clock(invited['expires_at'])}. Type 'join bob' or 'decline bob'.",
              *("  " + line for line in fibs_stake(fibs, "bob", "alice", 3)))

    term.type("invite bob backgammon unlimited\r")
    first = await term.expect(r"You invited bob to an unlimited \(unrated\) backgammon match, "
                              r"open until \d\d:\d\d:\d\d UTC\.\n")
    assert "rating" not in first  # an unrated match puts nothing at stake
    term.type("invite bob backgammon 8\r")
    await term.expect(r"You invited bob again \(this replaces your earlier invitation\) to an "
                      r"8-point backgammon match, open until \d\d:\d\d:\d\d UTC\.\n")
    await says(term, *fibs_stake(fibs, "alice", "bob", 8))
    (standing,) = (await bob.invitations()).received
    assert (standing.inviter, standing.length, standing.stake is not None) == ("alice", 8, True)
    term.type("invitations\r")
    await term.expect(r"Invitations you sent:\n  to bob: an 8-point backgammon match, open until "
                      r"\d\d:\d\d:\d\d UTC\. Type 'uninvite bob' to withdraw it\.\n"
                      r"Invitations you received:\n  from bob: ")
    await run(term, "uninvite bob", "Your invitation to bob is withdrawn.")
    assert (await bob.next_push("invitation_withdrawn"))["data"] == {
        "from": "alice", "ladder": "backgammon"}
    await run(term, "uninvite bob", "Error (not_found): You have not invited bob.")

    await bob.call("uninvite", name="alice")
    await says(term, "** bob withdrew the invitation to a backgammon match.")
    await run(term, "invitations", "No invitations, sent or received.")
    await bob.call("invite", name="alice", ladder="backgammon")
    await term.expect(r"\*\* bob invites you to a 1-point backgammon match.*\n(?:  .*\n){2}")
    await run(term, "decline bob", "You declined bob's invitation.")
    assert (await bob.next_push("declined"))["data"] == {"by": "alice"}
    assert term.raw.count(b"\x07") == 2


@pytest.fixture
async def quick_expiry(db_path: Path) -> AsyncIterator[LobbyServer]:
    lobby = LobbyServer(db_path, configure=lambda c: replace(c, invitation_timeout=0.5))
    await lobby.start()
    try:
        yield lobby
    finally:
        await lobby.aclose()


async def test_expiry_both_ways_and_the_bell_silenced(quick_expiry: LobbyServer,
                                                      tmp_path: Path) -> None:
    bob, _ = await quick_expiry.players("bob", "carol")
    await quick_expiry.player("alice")
    spawner = Spawner(quick_expiry, tmp_path)
    try:
        term = await spawner("alice", PASSWORD, "--no-bell")
        await bob.call("invite", name="alice", ladder="backgammon", length=2)
        await term.expect(r"\*\* bob invites you to a 2-point backgammon match, open until ")
        await says(term, "** bob's invitation (backgammon) has expired.")
        await run(term, "join bob", "Error (not_found): bob's invitation has expired.")
        term.type("invite carol backgammon\r")
        await term.expect(r"You invited carol to a 1-point backgammon match, open until .*\n")
        await says(term, "** Your invitation to carol (backgammon) has expired.")
        assert term.raw.count(b"\x07") == 0  # --no-bell

        quiet = await spawner("carol", PASSWORD, extra_env=(("MATCHLOBBY_NO_BELL", "1"),))
        await bob.call("invite", name="carol", ladder="backgammon")
        await quiet.expect(r"\*\* bob invites you to a 1-point backgammon match")
        assert quiet.raw.count(b"\x07") == 0  # the same by the environment
    finally:
        for t in spawner.terms:
            await t.aclose()


# ---- a match: presence, a claim, a dispute, one rating change -------------------------------


async def test_playing_claims_disputes_and_ones_own_change_printed_once(
        lobby: LobbyServer, spawn: Spawner) -> None:
    bob = await lobby.player("bob")
    await lobby.player("alice")
    admin = await lobby.admin()
    term = await spawn("alice")
    await bob.call("invite", name="alice", ladder="backgammon")
    await term.expect(r"Type 'join bob' or 'decline bob'\.\n(?:  .*\n){2}")
    term.type("join bob\r")
    mid = (await bob.next_push("match_started"))["data"]["match"]
    await says(term, f"Match {mid} started: bob vs alice (backgammon, 1 point).",
               *fibs_stake(FibsModel(), "bob", "alice", 1))
    await run(term, "who", "player  status   ratings", "alice   playing  -",
              "bob     playing  -", f"{ADMIN}    ready    -", "3 players, 0 spectators.")

    await run(term, "report win 1 0", f"You report a win in match {mid} (1 to 0); your "
                                      "opponent is asked to confirm or dispute it.")
    since = (await bob.call("dispute", match=mid))["since"]
    await says(term, f"** bob disputes your reported win in match {mid}; an admin will decide "
                     "it. You are free to play other matches meanwhile.")
    await run(term, "whois alice", "Information about alice:",
              "  Still logged in. Ready to play.",
              "  No ratings yet.",
              f"  Match {mid} (bob vs alice, backgammon) is disputed since "
              f"{since.replace('T', ' ').rstrip('Z')} UTC; an admin will decide it.")
    await run(term, "abort", f"Error (conflict): Match {mid} is disputed; an admin will "
                             "decide it. You are free to play another match meanwhile.")
    await admin.call("adjudicate", match=mid, winner="alice")
    rated = FibsModel().play("alice", "bob", 1)
    await says(term, f"** An admin decided match {mid} (backgammon, 1 point): alice wins.",
               *(f"  {p}: 1500.00 -> {rated[p][1]:.2f} ({rated[p][1] - 1500:+.2f})"
                 for p in ("alice", "bob")))

    # now bob claims and alice disputes from the terminal
    await bob.call("invite", name="alice", ladder="backgammon")
    await term.expect(r"Type 'join bob' or 'decline bob'\.\n(?:  .*\n){2}")
    term.type("join bob\r")
    m2 = (await bob.next_push("match_started"))["data"]["match"]
    await term.expect(rf"Match {m2} started: .*\n(?:  .*\n){{2}}")
    await bob.call("report win", score_a=1, score_b=0)
    await says(term, f"** bob reports a win in match {m2} (1 to 0). Type 'confirm {m2}' or "
                     f"'dispute {m2}'.")
    between = await run(term, f"dispute {m2}", f"You dispute the reported win in match {m2}: "
                                               "an admin will decide it. You are free to play "
                                               "other matches meanwhile.")
    assert (await bob.next_push("result_disputed"))["data"]["by"] == "alice"
    term.type("who\r")
    between += await term.expect(r"spectators\.\n")
    assert "** alice disputes" not in between  # the push of her own dispute is not repeated
    await admin.call("void", match=m2, reason="no agreement")
    await says(term, f"** Match {m2} (backgammon) was voided by an admin: no agreement.")

    # a rating change shows once: with the result, not again as a push
    await bob.call("invite", name="alice", ladder="backgammon")
    await term.expect(r"Type 'join bob' or 'decline bob'\.\n(?:  .*\n){2}")
    term.type("join bob\r")
    m3 = (await bob.next_push("match_started"))["data"]["match"]
    await term.expect(rf"Match {m3} started: .*\n(?:  .*\n){{2}}")
    term.type("resign\r")
    shown = await term.expect(rf"alice resigned; bob wins match {m3} \(backgammon, 1 point\)\.\n"
                              r"(?:  .*\n){2}")
    after = await run(term, "frobnicate",
                      "Error (unknown_command): Unknown command 'frobnicate'; try 'help'.")
    assert "rating:" not in after and "rating:" not in shown


# ---- a director's close on ČAS: who played, who moved ------------------------------------


async def test_a_cas_close_marks_who_played_and_who_moved(lobby: LobbyServer, spawn: Spawner,
                                                          tmp_path: Path) -> None:
    day = today()
    first = [f"Day 1,{day},alice,bob,420,380,,", f"Day 1,{day},bob,carol,400,390,,",
             f"Day 1,{day},carol,alice,350,351,,"]
    second = [f"Day 2,{day},bob,carol,410,300,,", f"Day 2,{day},dave,bob,390,380,,"]
    admin = await lobby.admin()
    for name, rows in (("Day 1", first), ("Day 2", second)):
        event = await admin.call("event create", name=name, ladder="scrabble")
        await admin.call("event import", new=True, event=event["id"], csv=results_text(rows))
    await admin.call("event close", event=1)
    before = {p["player"]: p["rating"]
              for p in (await rate_file("cas", first, tmp_path / "one.csv"))["players"]}
    after = {p["player"]: p["rating"]
             for p in (await rate_file("cas", first + second, tmp_path / "two.csv"))["players"]}
    moved = sorted(p for p in after if p not in ("bob", "carol", "dave")
                   and after[p] != before.get(p))
    assert moved == ["alice"], (before, after)  # the case the sentence is about

    term = await spawn(ADMIN, ADMIN_PASSWORD)
    lines = [f"Event 2: Day 2 (scrabble, {day}, closed)"]
    for player in sorted(after, key=str.casefold):
        b, a = before.get(player), after[player]
        if player == "alice":
            lines.append(f"  alice: {b} -> {a} ({a - b:+d}), moved by normalisation "
                         "(did not play)")
        elif b is None:
            lines.append(f"  {player}: - -> {a} (new), played")
        else:
            lines.append(f"  {player}: {b} -> {a} ({a - b:+d}), played")
    term.type("event close 2\r")
    shown = (await term.expect(r"Event 2: Day 2 .*\n(?:  .*\n)+"))
    got = shown[shown.index("Event 2"):].rstrip("\n").splitlines()
    assert got[0] == lines[0]
    assert sorted(got[1:]) == sorted(lines[1:])


# ---- completion of ladders and players ------------------------------------------------------


async def test_tab_completes_players_ladders_and_sub_commands(lobby: LobbyServer,
                                                              spawn: Spawner) -> None:
    bob = await lobby.player("bob")
    await lobby.player("alice")
    term = await spawn("alice")
    # Tab once the menu is up picks its entry; prompt_toolkit redraws only what changed, so the
    # line is judged by what it sends
    async def complete(typed: str, offered: str) -> None:
        term.type(typed)
        await term.expect(re.escape(offered) + " ")  # the completion menu
        term.type("\t")

    await complete("invite b", "bob")
    await complete(" backg", "backgammon")
    term.type(" 3\r")
    invited = await bob.next_push("invited")
    assert (invited["data"]["ladder"], invited["data"]["length"]) == ("backgammon", 3)
    await term.expect(r"You invited bob to a 3-point backgammon match")
    await complete("ladder foosball-d", "foosball-doubles")
    term.type("\r")
    await term.expect(r"foosball-doubles \(P4P\): 0 players\n")
    await complete("help event cl", "close")
    term.type("\r")
    await says(term, "event close EVENT")
    await complete("whois al", "alice")
    term.type("\r")
    await says(term, "Information about alice:")
