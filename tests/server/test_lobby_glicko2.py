"""Glicko-2 ladders in a real lobby: live matches, an event, corrections, restart, the audit.

The configuration adds two Glicko-2 ladders to the lobby; nothing in ``server/``
knows the system, which the registry finds by its entry point. Every rating,
RD and volatility is checked against tests/kit/testkit/glicko.py (docs/RATINGS.md
written out independently), fed the periods the way the log holds them: live
matches with the times the server stored (their RD grows with the elapsed time
between them), events with their day. ``matchlobby replay --check`` audits the
database with the same configuration after each correction.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import replay_check, run_cli_async
from testkit.clients import check_ladder_update, expect_error, start_match
from testkit.constants import PASSWORD
from testkit.db import sql
from testkit.glicko import REL, GlickoModel
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer, with_ladders

from clients import LobbyClient
from server.config import ConfigError, load_config

CONFIG = """
[password_hashing]
n = 1024

[[ladders]]
name = "backgammon"
system = "fibs"

[[ladders]]
name = "chess"
system = "glicko2"
provisional_rd = 250.0

# No idle step: a live ladder matching `matchlobby rate` on a file of the same games.
[[ladders]]
name = "blitz"
system = "glicko2"
periods_per_day = 0
"""
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "matchlobby.example.toml"
COLUMNS = [
    {"key": "rating", "label": "Rating", "type": "real", "decimals": 2},
    {"key": "rd", "label": "RD", "type": "real", "decimals": 2},
    {"key": "provisional", "label": "Provisional", "type": "boolean"},
    {"key": "games", "label": "Games", "type": "integer"},
]


def shape(columns: list[dict[str, Any]], provisional_rd: str) -> list[dict[str, Any]]:
    """The columns without their help texts, once those are checked: RD's and the provisional
    mark's explain them (the latter with the ladder's threshold)."""
    helps = {c["key"]: c.get("help", "") for c in columns}
    assert "deviation" in helps["rd"] and f"RD above {provisional_rd}" in helps["provisional"]
    return [{k: v for k, v in c.items() if k != "help"} for c in columns]


@pytest.fixture
async def glicko(db_path: Path) -> AsyncIterator[LobbyServer]:
    """A server with :data:`CONFIG`'s ladders, which the command line reads from the same
    file (beside the database)."""
    config = db_path.with_name("glicko.toml")
    config.write_text(CONFIG, encoding="utf-8")
    h = LobbyServer(db_path, configure=with_ladders(config))
    try:
        await h.start()
        yield h
    finally:
        await h.aclose()


async def glicko_replay_check(h: LobbyServer) -> tuple[int, str]:
    return await replay_check(h.db, h.db.with_name("glicko.toml"))


class Log:
    """The test's record of a ladder's periods, replayed into a fresh model on demand (a
    correction rewrites the past)."""

    def __init__(self, db: Path, periods_per_day: float = 0.21436) -> None:
        self.db = db
        self.periods_per_day = periods_per_day
        self.periods: list[tuple[Any, ...]] = []

    def live(self, mid: int, winner: str, loser: str) -> None:
        ((at, day),) = sql(self.db, "SELECT finished_at, played_on FROM matches WHERE id = ?",
                           (mid,))
        self.periods.append(("live", mid, winner, loser, at, date.fromisoformat(day)))

    def event(self, eid: int, day: date, games: list[tuple[str, str, float]]) -> None:
        self.periods.append(("event", eid, day, games))

    def void(self, mid: int) -> None:
        self.periods = [p for p in self.periods if p[:2] != ("live", mid)]

    def adjudicate(self, mid: int, winner: str) -> None:
        for i, p in enumerate(self.periods):
            if p[:2] == ("live", mid) and p[2] != winner:
                self.periods[i] = ("live", mid, p[3], p[2], p[4], p[5])

    def model(self) -> GlickoModel:
        model = GlickoModel(periods_per_day=self.periods_per_day)
        for p in self.periods:
            if p[0] == "live":
                model.live(p[2], p[3], p[4], p[5])
            else:
                model.event(p[2], p[3])
        return model


async def check_state(client: LobbyClient, log: Log, ladder: str, provisional_rd: float) -> None:
    """``ladder``, ``rating`` and ``history`` agree with the model of ``log``."""
    model = log.model()
    table = await client.call("ladder", ladder=ladder, all=True)
    assert table["system"] == "glicko2"
    assert shape(table["columns"], f"{provisional_rd:g}") == COLUMNS
    assert [r["player"] for r in table["players"]] == model.ranking()
    for row in table["players"]:
        p = model.players[row["player"]]
        assert row["rating"] == pytest.approx(p.rating, rel=REL), row
        assert row["rd"] == pytest.approx(p.rd, rel=REL), row
        assert row["volatility"] == pytest.approx(p.volatility, rel=REL), row
        assert row["games"] == p.games and row["of"] == len(model.players)
        assert row["provisional"] is (row["rd"] > provisional_rd)
        assert row["active"] is True
        (mine,) = (await client.call("rating", name=row["player"], ladder=ladder))["ratings"]
        assert mine == {"ladder": ladder, "system": "glicko2", **row}
        entries = (await client.call("history", name=row["player"], ladder=ladder))["entries"]
        got = [x for e in entries for x in (e["before"], e["after"])]
        assert got == pytest.approx([x for pair in p.history for x in pair], rel=REL)


async def play(winner: LobbyClient, loser: LobbyClient, ladder: str,
               scores: tuple[int, int] | None = None) -> dict[str, Any]:
    """A live match ``winner`` wins: by the loser's resignation, or claimed with ``scores``
    (the winner's first) and confirmed. The lobby checks claimed scores against the match's
    length (which Glicko-2 does not use), so a match with scores is played to the winner's."""
    mid = await start_match(winner, loser, ladder=ladder, length=scores[0] if scores else 1)
    if scores is None:
        finished: dict[str, Any] = await loser.call("resign")
    else:
        await winner.call("report win", score_a=scores[0], score_b=scores[1])
        await loser.next_push("result_claimed")
        finished = await loser.call("confirm", match=mid)
    assert finished["match"] == mid and finished["ladder"] == ladder
    return finished


def check_changes(finished: dict[str, Any], model: GlickoModel) -> None:
    """A match's reply: both players' rating change, as the model has it."""
    assert len(finished["changes"]) == 2
    for c in finished["changes"]:
        before, after = model.players[c["player"]].history[-1]
        assert (c["before"], c["after"]) == pytest.approx((before, after), rel=REL)
        assert c["change"] == c["after"] - c["before"]


async def test_live_matches_an_event_and_corrections_agree_with_the_log(
        glicko: LobbyServer) -> None:
    alice, bob, carol, dave = await glicko.players("alice", "bob", "carol", "dave")
    admin = await glicko.admin()
    watcher = await glicko.client()
    await watcher.watch("chess")

    ladders = {x["ladder"]: x for x in (await watcher.call("ladders"))["ladders"]}
    chess = ladders["chess"]
    assert shape(chess.pop("columns"), "250") == COLUMNS
    assert chess == {"ladder": "chess", "system": "glicko2", "system_title": "Glicko-2",
                     "format": "singles", "updated": "after each match; events when they close",
                     "live": True, "players": 0}

    log = Log(glicko.db)
    for winner, loser, w, lo, scores in [(alice, bob, "alice", "bob", None),
                                         (bob, carol, "bob", "carol", (5, 2)),
                                         (carol, alice, "carol", "alice", None),
                                         (alice, dave, "alice", "dave", None),
                                         (alice, bob, "alice", "bob", (3, 0))]:
        finished = await play(winner, loser, "chess", scores)
        log.live(finished["match"], w, lo)
        check_changes(finished, log.model())
    # every newcomer is provisional after a game or two; alice, after four, is not
    await check_state(watcher, log, "chess", 250.0)
    rows = {r["player"]: r for r in (await watcher.call("ladder", ladder="chess"))["players"]}
    assert rows["dave"]["provisional"] is True and rows["alice"]["provisional"] is False
    assert (await glicko_replay_check(glicko)) == (0, "replay --check: every rating agrees with the "
                                               "match log\n")

    # A voided match: the ladder as if it had never been played.
    m2 = log.periods[1][1]
    voided = await admin.call("void", match=m2, reason="wrong players")
    assert voided["recomputed"] is True
    log.void(m2)
    await check_state(watcher, log, "chess", 250.0)
    update = await watcher.next_push("ladder_updated")
    check_ladder_update(update["data"], await watcher.call("ladder", ladder="chess", all=True),
                        [c["player"] for c in voided["changes"]])
    assert (await glicko_replay_check(glicko))[0] == 0

    # An adjudication the other way: scores and winner swap, the ladder is recomputed.
    m3 = log.periods[1][1]
    await admin.call("adjudicate", match=m3, winner="alice")
    log.adjudicate(m3, "alice")
    await check_state(watcher, log, "chess", 250.0)
    assert (await glicko_replay_check(glicko))[0] == 0

    # An event three days on: one period for everyone in it, from the values before it (whole
    # calendar days of idle time since each player's last day), rated when it closes.
    day = date.fromisoformat(today()) + timedelta(days=3)
    event = await admin.call("event create", name="Club night", ladder="chess",
                             date=day.isoformat())
    games = [("alice", "carol", 2, 2), ("bob", "dave", 1, 0), ("dave", "alice", 0, 1),
             ("erin", "bob", 4, 1)]
    for a, b, sa, sb in games:
        data = await admin.call("event result", new=True, event=event["id"], side_a=a, side_b=b,
                                score_a=sa, score_b=sb)
        assert data["rated"] is True and "changes" not in data
    await check_state(watcher, log, "chess", 250.0)  # nothing moves before the close
    closed = await admin.call("event close", event=event["id"])
    scored = [(a, b, 0.5 if sa == sb else float(sa > sb)) for a, b, sa, sb in games]
    log.event(event["id"], day, scored)
    model = log.model()
    assert sorted(c["player"] for c in closed["changes"]) == ["alice", "bob", "carol", "dave",
                                                              "erin"]
    for c in closed["changes"]:
        assert (c["before"], c["after"]) == pytest.approx(model.players[c["player"]].history[-1],
                                                          rel=REL)
        assert c["cause"] == {"event": event["id"]}
    await check_state(watcher, log, "chess", 250.0)
    # one period, not four: the games one after the other would give alice another rating
    one_by_one = Log(glicko.db)
    one_by_one.periods = log.periods[:-1] + [("event", 0, day, [g]) for g in scored]
    assert one_by_one.model().players["alice"].rating != pytest.approx(
        model.players["alice"].rating, rel=REL)
    assert (await glicko_replay_check(glicko))[0] == 0

    # More live matches after the event, a restart (the standings come back from the ratings
    # table), more matches, the audit.
    for winner, loser, w, lo in [(dave, carol, "dave", "carol"), (bob, alice, "bob", "alice")]:
        finished = await play(winner, loser, "chess")
        log.live(finished["match"], w, lo)
        check_changes(finished, log.model())
    await glicko.stop()
    await glicko.start()
    alice, carol = await glicko.client(), await glicko.client()
    await alice.login("alice", PASSWORD)
    await carol.login("carol", PASSWORD)
    watcher = await glicko.client()
    finished = await play(carol, alice, "chess")
    log.live(finished["match"], "carol", "alice")
    check_changes(finished, log.model())
    await check_state(watcher, log, "chess", 250.0)
    assert (await glicko_replay_check(glicko))[0] == 0
    # every Glicko-2 field stored survives the round trip through the ratings table
    state = json.loads(sql(glicko.db, "SELECT r.state FROM ratings r JOIN players p ON "
                                      "p.id = r.player_id WHERE p.name = 'carol' AND "
                                      "r.ladder = 'chess'")[0][0])
    ((at,),) = sql(glicko.db, "SELECT finished_at FROM matches WHERE id = ?",
                   (finished["match"],))
    assert set(state) == {"rd", "volatility", "last_at"} and state["last_at"] == at


async def test_rate_agrees_with_the_live_ladder(glicko: LobbyServer, tmp_path: Path) -> None:
    """``matchlobby rate glicko2`` on the live matches written as a results file gives the live
    ladder's rows exactly.

    Idle time is the one thing the two could see differently: live matches are
    seconds apart (elapsed days), a results file counts whole days. The live
    ladder ``blitz`` has ``periods_per_day = 0`` and the file puts every match on
    one day, so neither grows any RD; each match is its own event in the file,
    hence its own period, as each live match is.
    """
    ann, ben, cat, dan = await glicko.players("ann", "ben", "cat", "dan")
    admin = await glicko.admin()
    played: list[tuple[int, str, str, tuple[int, int]]] = []
    for winner, loser, w, lo, scores in [(ann, ben, "ann", "ben", (3, 1)),
                                         (ben, cat, "ben", "cat", None),
                                         (cat, dan, "cat", "dan", (7, 6)),
                                         (ann, cat, "ann", "cat", None),
                                         (dan, ann, "dan", "ann", None),
                                         (ben, dan, "ben", "dan", (2, 0)),
                                         (ann, dan, "ann", "dan", None)]:
        finished = await play(winner, loser, "blitz", scores)
        played.append((finished["match"], w, lo, scores or (1, 0)))
    voided = played.pop(2)[0]
    await admin.call("void", match=voided, reason="played on the wrong board")

    day = today()
    path = tmp_path / "blitz.csv"
    path.write_text(results_text(f"match {mid},{day},{w},{lo},{sw},{sl},," for mid, w, lo, (sw, sl)
                                 in played), encoding="utf-8")
    done = await run_cli_async(["rate", "glicko2", str(path), "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    offline = json.loads(done.stdout)
    live = await admin.call("ladder", ladder="blitz", all=True)
    assert offline["columns"] == live["columns"]
    assert shape(live["columns"], "110") == COLUMNS
    assert len(live["players"]) == 4
    assert offline["players"] == live["players"]  # every field, every digit

    model = Log(glicko.db, periods_per_day=0)
    for mid, w, lo, _ in played:
        model.live(mid, w, lo)
    await check_state(admin, model, "blitz", 110.0)
    assert (await glicko_replay_check(glicko))[0] == 0


async def test_doubles_are_refused_on_a_glicko2_ladder(glicko: LobbyServer,
                                                       tmp_path: Path) -> None:
    config = tmp_path / "doubles.toml"
    config.write_text('[[ladders]]\nname = "pairs"\nsystem = "glicko2"\nformat = "doubles"\n',
                      encoding="utf-8")
    with pytest.raises(ConfigError, match="Glicko-2 has no doubles ladders"):
        load_config(config)
    admin = await glicko.admin()
    eid = (await admin.call("event create", name="Pairs", ladder="chess"))["id"]
    await expect_error(admin.call("event result", new=True, event=eid, side_a="ann+ben", side_b="cat+dan",
                                  score_a=1, score_b=0), "bad_request")
    rows = results_text([f"Pairs,{today()},ann+ben,cat+dan,1,0,,"])
    error = await expect_error(admin.call("event import", new=True, event=eid, csv=rows), "bad_request")
    assert "CSV:2" in error.message
    closed = await admin.call("event close", event=eid)
    assert closed["changes"] == []
    assert (await admin.call("ladder", ladder="chess", all=True))["players"] == []
    assert sql(glicko.db, "SELECT count(*) FROM matches WHERE event_id = ?", (eid,)) == [(0,)]


def test_the_examples_glicko2_ladder_shows_every_option_at_its_default(tmp_path: Path) -> None:
    """docs/matchlobby.example.toml keeps it commented out (the example is the defaults);
    uncommented, it is a Glicko-2 ladder with every option, each at its default."""
    text = EXAMPLE.read_text(encoding="utf-8")
    block = text[text.index('# [[ladders]]\n# name = "chess"\n# system = "glicko2"'):]
    lines = [line[2:] for line in block.splitlines() if line.startswith("# ")]
    path = tmp_path / "glicko2.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (ladder,) = load_config(path).ladders
    assert (ladder.name, ladder.system.name, ladder.format) == ("chess", "glicko2", "singles")
    assert ladder.options == ladder.system.parse_options({})
    keys = {line.split("=")[0].strip() for line in lines if "=" in line} - {"name", "system"}
    assert keys == ladder.system.option_keys() - {"format"}
