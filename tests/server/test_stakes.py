"""What a match puts at stake, through a real lobby: the ``stake`` query and the ``stake`` field.

The figures are checked against each system's formula written out here and in
the test kit, independently of the server (FIBS: RATINGS.md §1 with
``testkit.fibs.fibs_changes``; Glicko-2: §5 with ``testkit.glicko``), on random
ratings, experiences, deviations, days away and match lengths. The standings
are written into the ratings plugin's table of a stopped lobby, which loads
them when it starts again, so every pair starts from figures no match could
have made.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from testkit.clients import expect_error, name_of, start_match
from testkit.constants import PASSWORD
from testkit.db import executemany, sql
from testkit.fibs import close, fibs_changes
from testkit.glicko import PERIODS_PER_DAY, REL, grown_rd, period, win_probability
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from server.config import default_ladders, ladder_config

GLICKO = ladder_config({"name": "chess", "system": "glicko2"}, "the stakes test")
NAMES = [f"p{i:02d}" for i in range(12)]
NEWCOMERS = {"p10", "p11"}  # no rated match yet: their start values are at stake


def fibs_chance(own: float, other: float, length: int) -> float:
    """RATINGS.md §1: U = 1/(10^(D·√n/2000) + 1) for the underdog, F = 1 − U, ½ when equal."""
    if own == other:
        return 0.5
    underdog = 1 / (10 ** (abs(own - other) * math.sqrt(length) / 2000) + 1)
    return 1 - underdog if own > other else underdog


@dataclass
class Seeded:
    rating: float
    experience: int = 0  # FIBS
    rd: float = 350.0  # Glicko-2
    volatility: float = 0.06
    days_away: int = 0


async def start(harness: LobbyServer, glicko: bool = False) -> None:
    """Start ``harness`` with the default ladders (and :data:`GLICKO` if ``glicko``)."""
    ladders = (*default_ladders(), GLICKO) if glicko else default_ladders()
    harness.configure = lambda config: replace(config, ladders=ladders)
    await harness.start()


async def seeded_lobby(harness: LobbyServer, glicko: bool, rng: random.Random
                       ) -> tuple[dict[str, Seeded], dict[str, LobbyClient]]:
    """Accounts for :data:`NAMES`, standings written straight into the table, the lobby
    started again over them and everyone logged in."""
    await start(harness, glicko)
    for name in NAMES:
        await (await harness.player(name)).close()
    await harness.stop()
    ids = dict(sql(harness.db, "SELECT name, id FROM players"))
    today = datetime.now(UTC).date()  # the lobby's calendar
    seeded: dict[str, Seeded] = {}
    rows = []
    for name in NAMES:
        if name in NEWCOMERS:
            seeded[name] = Seeded(1500.0)
            continue
        if glicko:
            s = Seeded(rng.uniform(1100, 1900), rd=rng.uniform(40, 350),
                       volatility=rng.uniform(0.04, 0.09), days_away=rng.randint(0, 90))
            state = {"rd": s.rd, "volatility": s.volatility, "last_at": None}
            ladder = "chess"
        else:
            s = Seeded(rng.uniform(1000, 2200), experience=rng.randint(0, 1500))
            state = {"experience": s.experience}
            ladder = "backgammon"
        seeded[name] = s
        played = (today - timedelta(days=s.days_away)).isoformat()
        rows.append((ladder, ids[name], s.rating, rng.randint(1, 300), played, json.dumps(state)))
    assert sql(harness.db, "SELECT count(*) FROM ratings") == [(0,)]
    executemany(harness.db, "INSERT INTO ratings (ladder, player_id, rating, games, last_played, "
                            "state) VALUES (?, ?, ?, ?, ?, ?)", rows)
    await start(harness, glicko)
    clients = {}
    for name in NAMES:
        c = await harness.client()
        await c.login(name, PASSWORD)
        clients[name] = c
    return seeded, clients


def check_fibs(stake: dict[str, Any], a: Seeded, b: Seeded, length: int) -> None:
    first, second = stake["players"]
    assert (first["rating"], second["rating"]) == (a.rating, b.rating)
    assert close(first["chance"], fibs_chance(a.rating, b.rating, length))
    assert close(second["chance"], fibs_chance(b.rating, a.rating, length))
    a_wins = fibs_changes(a.rating, a.experience, b.rating, b.experience, length, True)
    b_wins = fibs_changes(a.rating, a.experience, b.rating, b.experience, length, False)
    assert close(first["win"], a_wins[0]) and close(second["loss"], a_wins[1])
    assert close(first["loss"], b_wins[0]) and close(second["win"], b_wins[1])
    assert first["win"] > 0 > first["loss"] and second["win"] > 0 > second["loss"]


async def test_fibs_stakes_are_the_formula_on_random_ratings_and_lengths(harness: LobbyServer
                                                                         ) -> None:
    rng = random.Random(22)
    seeded, clients = await seeded_lobby(harness, glicko=False, rng=rng)
    for _ in range(40):
        a, b = rng.sample(NAMES, 2)
        length = rng.choice([1, 1, 3, 5, 7, 9, 11, 13, 17, 25, rng.randint(1, 1000)])
        stake = await clients[a].call("stake", name=b, ladder="backgammon", length=length)
        assert (stake["ladder"], stake["length"]) == ("backgammon", length)
        assert [p["player"] for p in stake["players"]] == [a, b]  # the caller first
        check_fibs(stake, seeded[a], seeded[b], length)
    # LENGTH defaults to 1, as for invite
    one = await clients["p00"].call("stake", name="p01", ladder="backgammon")
    assert one["length"] == 1
    check_fibs(one, seeded["p00"], seeded["p01"], 1)


async def test_glicko2_stakes_are_the_formula_on_random_ratings(harness: LobbyServer) -> None:
    rng = random.Random(5)
    seeded, clients = await seeded_lobby(harness, glicko=True, rng=rng)
    for _ in range(40):
        a, b = rng.sample(NAMES, 2)
        length = rng.randint(1, 15)  # Glicko-2 does not play to a length: it changes nothing
        stake = await clients[a].call("stake", name=b, ladder="chess", length=length)
        assert (stake["ladder"], stake["length"]) == ("chess", length)
        sa, sb = seeded[a], seeded[b]
        first, second = stake["players"]
        assert [first["player"], second["player"]] == [a, b]
        assert (first["rating"], second["rating"]) == (sa.rating, sb.rating)
        # §5's expectation from the values as they stand
        assert math.isclose(first["chance"], win_probability(sa.rating, sa.rd, sb.rating, sb.rd),
                            rel_tol=1e-12)
        assert math.isclose(second["chance"], win_probability(sb.rating, sb.rd, sa.rating, sa.rd),
                            rel_tol=1e-12)
        # the period a match now would be: each RD grown by the whole days since the last game
        start = {n: (s.rating, grown_rd(s.rd, s.volatility, s.days_away * PERIODS_PER_DAY),
                     s.volatility) for n, s in ((a, sa), (b, sb))}
        for me, other, first_or_second in ((a, b, first), (b, a, second)):
            mine, theirs = start[me], start[other]
            won = period(*mine, [(theirs[0], theirs[1], 1.0)])[0] - mine[0]
            lost = period(*mine, [(theirs[0], theirs[1], 0.0)])[0] - mine[0]
            assert math.isclose(first_or_second["win"], won, rel_tol=REL), (me, won)
            assert math.isclose(first_or_second["loss"], lost, rel_tol=REL), (me, lost)


async def test_the_stake_rides_on_the_invitation_the_match_and_the_profile(harness: LobbyServer
                                                                           ) -> None:
    await harness.start()
    alice, bob, carol = await harness.players("alice", "bob", "carol")
    # a first match, so that the figures are not the newcomers' symmetrical ones
    await start_match(alice, carol, length=5)
    await carol.call("resign")
    asked = await alice.call("stake", name="bob", ladder="backgammon", length=3)
    invited = await alice.call("invite", name="bob", ladder="backgammon", length=3)
    assert invited["stake"] == asked
    push = await bob.next_push("invited")
    assert push["data"]["stake"] == asked
    received = (await bob.call("invitations"))["received"]
    assert [r["stake"] for r in received] == [asked]
    # bob asks from his side: the same figures, himself first
    mirrored = await bob.call("stake", name="alice", ladder="backgammon", length=3)
    assert mirrored["players"] == asked["players"][::-1]
    started = await bob.call("join", name="alice")
    assert started["stake"] == asked  # the inviter (side a) first
    assert (await alice.next_push("match_started"))["data"] == started
    assert (await carol.call("whois", name="bob"))["match"] == started
    again = await harness.client()
    assert (await again.login("bob", PASSWORD))["match"] == {**started, "claim_in": None}
    # and the match, once over, moved the ratings by exactly what was at stake
    finished = await alice.call("resign")
    changes = {c["player"]: c["change"] for c in finished["changes"]}
    first, second = asked["players"]
    assert (changes["alice"], changes["bob"]) == (first["loss"], second["win"])


async def test_no_stake_for_an_unrated_match_or_a_ladder_without_live_matches(harness: LobbyServer
                                                                              ) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    invited = await alice.call("invite", name="bob", ladder="backgammon", length="unlimited")
    assert invited["stake"] is None
    assert (await bob.next_push("invited"))["data"]["stake"] is None
    assert [r["stake"] for r in (await bob.call("invitations"))["received"]] == [None]
    started = await bob.call("join", name="alice")
    assert started["stake"] is None and started["length"] == "unlimited"
    assert (await alice.call("whois", name="bob"))["match"]["stake"] is None
    carol = await harness.player("carol")
    e = await expect_error(carol.call("stake", name="alice", ladder="backgammon",
                                      length="unlimited"), "bad_request")
    assert "nothing is at stake" in e.message
    e = await expect_error(carol.call("stake", name="alice", ladder="scrabble"), "bad_request")
    assert "events only" in e.message
    await expect_error(carol.call("stake", name="carol", ladder="backgammon"), "bad_request")
    await expect_error(carol.call("stake", name="nobody", ladder="backgammon"), "not_found")
    await expect_error(carol.call("stake", name="alice", ladder="chess"), "not_found")
    spectator = await harness.client()
    await expect_error(spectator.call("stake", name="alice", ladder="backgammon"),
                       "not_logged_in")


@pytest.mark.parametrize("glicko", [False, True])
async def test_a_stake_is_what_the_match_then_does(harness: LobbyServer, glicko: bool) -> None:
    """Asked just before the match ends, the stake equals the change the match makes (a
    Glicko-2 match's RD grows by the seconds in between, so there to within the kit's bound)."""
    await start(harness, glicko=True)
    ladder = "chess" if glicko else "backgammon"
    rng = random.Random(3)
    players = await harness.players("ann", "ben", "cid")
    for _ in range(4):
        a, b = rng.sample(players, 2)
        length = rng.randint(1, 9)
        await start_match(a, b, length=length, ladder=ladder)
        stake = await a.call("stake", name=name_of(b), ladder=ladder, length=length)
        winner = rng.choice([a, b])
        finished = await (b if winner is a else a).call("resign")
        changes = {c["player"]: c["change"] for c in finished["changes"]}
        first, second = stake["players"]
        a_won = winner is a
        expected = {first["player"]: first["win" if a_won else "loss"],
                    second["player"]: second["loss" if a_won else "win"]}
        for player, change in changes.items():
            if glicko:
                assert math.isclose(change, expected[player], rel_tol=1e-6), (player, change)
            else:
                assert change == expected[player]

