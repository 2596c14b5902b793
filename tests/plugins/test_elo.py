"""The Elo rating system (tests/plugins/elo), an outside package, in a real lobby.

It is found through its ``matchlobby.rating_systems`` entry point, imports only
``server.api`` and defines only a system's core on ``server.api.SystemBase``:
its options, a newcomer's standing, the rating of one game and the
expectation. With no other code a ladder configured ``system = "elo"`` rates
live matches, ``matchlobby rate elo`` rates a results file, ``replay --check``
agrees with the log after a void, ``matchlobby evaluate`` scores its predictions, and its
books predict. Every number is
checked against the Elo formula written out here.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import pytest
from testkit.cli import rate_file, replay_check, run_cli_async
from testkit.clients import start_match
from testkit.db import sql
from testkit.server_loop import LobbyServer, with_ladders

from clients import LobbyClient
from server.api import Game, LadderConfig, RatedUnit
from server.api.registry import rating_systems
from server.api.systems import (
    history_loading,
    live_outcomes,
    plain_replay,
    shared_field,
    tail_corrections,
)

PLUGIN = Path(__file__).resolve().parent / "elo"
K = 24.0
CONFIG = f"""
[password_hashing]
n = 1024

[[ladders]]
name = "club"
system = "elo"
k = {K}
"""


def elo(ratings: dict[str, float], winner: str, loser: str, k: float = K) -> None:
    """One game by the textbook formula: each moves by K × (score − expected score)."""
    rw, rl = ratings.get(winner, 1500.0), ratings.get(loser, 1500.0)
    expected = 1.0 / (1.0 + 10.0 ** ((rl - rw) / 400.0))
    ratings[winner], ratings[loser] = rw + k * (1.0 - expected), rl - k * (1.0 - expected)


@pytest.fixture
async def club(db_path: Path) -> AsyncIterator[LobbyServer]:
    """A server with one Elo ladder, whose configuration the command line reads too."""
    config = db_path.with_name("elo.toml")
    config.write_text(CONFIG, encoding="utf-8")
    h = LobbyServer(db_path, configure=with_ladders(config))
    try:
        await h.start()
        yield h
    finally:
        await h.aclose()


def test_found_by_its_entry_point() -> None:
    """(That it imports only ``server.api`` is held for every test plugin by
    tests/plugins/test_import_rules.py.)"""
    system = rating_systems()["elo"]
    module = __import__(type(system).__module__, fromlist=["_"])
    assert Path(module.__file__ or "").is_relative_to(PLUGIN)


def test_docs_plugins_shows_its_code() -> None:
    """docs/PLUGINS.md's worked example is the plugin's code, line for line."""
    docs = (PLUGIN.parents[2] / "docs" / "PLUGINS.md").read_text(encoding="utf-8")
    example = docs.split("### The worked example: Elo", 1)[1].split("```python\n", 1)[1]
    source = (PLUGIN / "matchlobby_elo" / "system.py").read_text(encoding="utf-8")
    lines = [line for line in example.split("```", 1)[0].splitlines() if line.strip()]
    assert len(lines) > 20 and [line for line in lines if line not in source.splitlines()] == []


def test_it_defines_only_the_core_and_its_book_predicts() -> None:
    system = rating_systems()["elo"]
    tree = ast.parse((PLUGIN / "matchlobby_elo" / "system.py").read_text(encoding="utf-8"))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Elo").body
    own = {t.id for n in body if isinstance(n, ast.Assign) for t in n.targets
           if isinstance(t, ast.Name)} | {n.name for n in body if isinstance(n, ast.FunctionDef)}
    assert own == {"name", "title", "live_matches", "rates_each_result", "keys",
                   "read_options", "new_book", "expectation"}
    options = system.parse_options({"k": 16, "inactivity_days": 30})
    assert (options.k, options.start_rating, options.inactivity_days) == (16.0, 1500.0, 30)
    book = system.new_book(options)
    day = date(2026, 3, 1)
    won = Game(("ann",), ("ben",), 1, 0, day)
    unit = RatedUnit("x", 1, "2026-03-01T00:00:00Z", (won,), {})
    book.accept(book.compute(unit), unit)
    ratings: dict[str, float] = {}
    elo(ratings, "ann", "ben", 16.0)
    assert {p: s.rating for p, s in book.standings.items()} == pytest.approx(ratings, rel=1e-12)
    p = book.predict(Game(("ann",), ("ben",), 0, 0, day))
    assert p == pytest.approx(1.0 / (1.0 + 10.0 ** ((ratings["ben"] - ratings["ann"]) / 400.0)),
                              rel=1e-12)
    assert book.predict(Game(("ann",), ("cid",), 0, 0, day)) > 0.5 > book.predict(
        Game(("ben",), ("cid",), 0, 0, day))
    # the lobby-wide rules from the base: an unlimited live match is unrated, draws refused
    assert not system.counts(options, Game(("ann",), ("ben",), 1, 0, day, None))
    with pytest.raises(ValueError, match="no draws"):
        system.check_game(options, Game(("ann",), ("ben",), 1, 1, day))
    with pytest.raises(ValueError, match="k must be positive"):
        system.parse_options({"k": 0})


def test_capabilities_are_found_by_their_members() -> None:
    """Elo has none of the optional capabilities; the ratings plugin finds each system's."""
    found = {}
    for name in ("elo", "fibs", "p4p", "glicko2", "cas"):
        system = rating_systems()[name]
        ladder = LadderConfig(name, system, system.parse_options({}))
        book = system.new_book(ladder.options)
        found[name] = (plain_replay(ladder, {}) is not None,
                       tail_corrections(system) is not None, live_outcomes(system) is not None,
                       history_loading(book) is not None, shared_field(system))
    assert found == {"elo": (False, False, False, False, None),
                     "fibs": (True, True, True, False, None),
                     "p4p": (False, False, False, False, None),
                     "glicko2": (False, False, False, False, None),
                     "cas": (False, False, False, True, "peklo")}


async def win(winner: LobbyClient, loser: LobbyClient) -> dict[str, float]:
    """A live match on the Elo ladder the loser resigns: the reply's new ratings."""
    mid = await start_match(winner, loser, ladder="club")
    finished = await loser.call("resign")
    assert finished["match"] == mid and finished["rated"] is True
    return {c["player"]: c["after"] for c in finished["changes"]}


async def check_stake(asker: LobbyClient, a: str, b: str, ratings: dict[str, float]) -> None:
    """The stake of a match of ``a`` (asking) against ``b``: each one's chance is the Elo
    expectation, each outcome's change K × (score − expectation)."""
    stake = await asker.call("stake", name=b, ladder="club")
    for row, me, other in zip(stake["players"], (a, b), (b, a), strict=True):
        own, theirs = ratings.get(me, 1500.0), ratings.get(other, 1500.0)
        expected = 1.0 / (1.0 + 10.0 ** ((theirs - own) / 400.0))
        assert (row["player"], row["rating"]) == (me, pytest.approx(own, rel=1e-12))
        assert row["chance"] == pytest.approx(expected, rel=1e-12)
        assert row["win"] == pytest.approx(K * (1.0 - expected), rel=1e-12)
        assert row["loss"] == pytest.approx(-K * expected, rel=1e-12)


async def test_live_matches_a_void_and_replay_check(club: LobbyServer) -> None:
    alice, bob, carol = await club.players("alice", "bob", "carol")
    admin = await club.admin()
    ratings: dict[str, float] = {}
    for winner, loser, w, lo in [(alice, bob, "alice", "bob"), (bob, carol, "bob", "carol"),
                                 (alice, carol, "alice", "carol")]:
        after = await win(winner, loser)
        elo(ratings, w, lo)
        assert after == pytest.approx({w: ratings[w], lo: ratings[lo]}, rel=1e-12)
    rows = (await admin.call("ladder", ladder="club"))["players"]
    assert {r["player"]: (r["rating"], r["games"]) for r in rows} == {
        "alice": (pytest.approx(ratings["alice"], rel=1e-12), 2),
        "bob": (pytest.approx(ratings["bob"], rel=1e-12), 2),
        "carol": (pytest.approx(ratings["carol"], rel=1e-12), 2)}
    await check_stake(bob, "bob", "carol", ratings)  # through its book: no code of its own
    config = club.db.with_name("elo.toml")
    assert await replay_check(club.db, config) == (
        0, "replay --check: every rating agrees with the match log\n")

    # bob's win over carol voided: the ladder as if it had never been played
    ((mid,),) = sql(club.db, "SELECT id FROM matches WHERE side_a = 'bob' AND side_b = 'carol'")
    assert (await admin.call("void", match=mid, reason="wrong players"))["recomputed"] is True
    ratings = {}
    elo(ratings, "alice", "bob")
    elo(ratings, "alice", "carol")
    rows = (await admin.call("ladder", ladder="club"))["players"]
    assert {r["player"]: r["rating"] for r in rows} == pytest.approx(ratings, rel=1e-12)
    await check_stake(bob, "bob", "carol", ratings)  # the void's ratings, not the one shown
    assert (await replay_check(club.db, config))[0] == 0

    # evaluate scores its predictions with no code of its own: the two rated matches left, each
    # predicted by the Elo expectation from the ratings just before it (the winner is side A)
    done = await run_cli_async(["evaluate", "--ladder", "club", "--db", str(club.db),
                                "--config", str(config), "--format", "json"], club.db.parent)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["systems"][0]
    before: dict[str, float] = {}
    chances = []
    for w, lo in [("alice", "bob"), ("alice", "carol")]:
        rw, rl = before.get(w, 1500.0), before.get(lo, 1500.0)
        chances.append(1.0 / (1.0 + 10.0 ** ((rl - rw) / 400.0)))
        elo(before, w, lo)
    assert (row["system"], row["games"]) == ("elo", 2)
    assert row["log_loss"] == pytest.approx(-sum(map(math.log, chances)) / 2, abs=1e-12)
    assert row["brier"] == pytest.approx(sum((1 - p) ** 2 for p in chances) / 2, abs=1e-12)


async def test_rate_gives_the_elo_numbers(tmp_path: Path) -> None:
    rows = ["Night,2026-03-01,ann,ben,3,1,,", "Night,2026-03-01,cid,ann,2,0,,",
            "Cup,2026-03-08,ben,cid,5,4,,"]
    ladder = await rate_file("elo", rows, tmp_path / "elo.csv")
    ratings: dict[str, float] = {}
    for w, lo in [("ann", "ben"), ("cid", "ann"), ("ben", "cid")]:
        elo(ratings, w, lo, 32.0)
    assert ladder["system"] == "elo"
    assert [c["key"] for c in ladder["columns"]] == ["rating", "games"]
    got = {r["player"]: r["rating"] for r in ladder["players"]}
    assert got == pytest.approx(ratings, rel=1e-12)
    assert [r["player"] for r in ladder["players"]] == sorted(ratings, key=lambda p: -ratings[p])
    assert math.isclose(sum(got.values()), 4500.0)
