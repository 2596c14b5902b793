"""Benchmark: ``matchlobby replay`` of 1,000,000 logged FIBS matches, against the formula alone.

Figure 5: ``matchlobby replay`` (rewrite every ladder's ratings
and history from the match log) and ``matchlobby replay --check`` on a log of
1,000,000 finished FIBS matches, against a loop that only applies the FIBS
formula (``ratings_plugin.systems.fibs.rate_match``) to the same matches,
already in memory as plain Python lists; target ≤ 3×.

Set-up writes the log straight into a database made by the server's own
schema (``server.store.schema.migrate``): 20,000 players (mixed-case names), the
matches on the default ``backgammon`` ladder in ``seq`` order but with ids
shuffled locally (a live match gets its id when it starts and its ``seq``
when it ends), lengths 1–11 (mostly odd), winners drawn from latent
strengths, about half with final scores; 2 % of them are results of closed
backgammon events. Around them, as the server would leave them: voided
matches (keeping their ``seq``, with a ``corrections`` row), adjudicated ones
(winner flipped, scores swapped, a ``corrections`` row), aborted and
unlimited matches (no ``seq``), and both players' ``match_players`` rows for
every match. Ratings and history are then filled by one ``matchlobby
replay``. The result is cached (versioned file name, in the temporary
directory) and copied to a work file for each run.

Each round, in this order: the baseline; ``matchlobby replay --check`` (must
exit 0); ``matchlobby replay`` three times (:data:`REWRITES`): with every
stored row agreeing with the log, with one value changed 1 % before the end
of the history, and with the first value changed (the rewrite keeps the rows
that agree and writes the rest, so these write nothing, ~1 % and all of the
2M rows); after each, the stored ratings and history must be byte-identical
to those before it (a digest of every value's ``repr``, ids included); the
baseline again (the round's ratios use the mean of the two). After the last
round, ``--check`` once more, and then the floor (:func:`floor`): the parts of
a rewrite of every row (log read, replay, inserts, index builds, commit,
close) each timed alone in this process, against the formula alone timed just
before and after. The commands run as the user runs them: the
``matchlobby`` console script, as a subprocess (wall time, interpreter
start-up included). The baseline runs in
this process: the same rated matches loaded into lists (load timed apart, not
counted), then only ``fibs.rate_match`` over them in ``seq`` order, each
player's ``FibsRating`` in a dict.

Since the cached ratings and history were written by whichever version built
the cache, ``--check`` and the digest also compare this version's replay with
that one's, bit for bit.

Run from the repository root:  .venv/bin/python bench/replay.py [--matches N]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench._harness import bench_env, matchlobby_command  # noqa: E402
from ratings_plugin.commands.replay import (  # noqa: E402
    CACHE_PRAGMA,
    CHUNK,
    REWRITE_PRAGMAS,
    _history_indexes,
    _insert_history,
    fetched,
    match_log,
)
from ratings_plugin.systems import fibs  # noqa: E402
from server.api import LadderConfig, PlainReplay  # noqa: E402
from server.api.systems import plain_replay  # noqa: E402
from server.config import Config, default_ladders  # noqa: E402
from server.plugins import migrate_all  # noqa: E402
from server.store.connection import PRAGMAS, open_connection  # noqa: E402
from server.store.schema import SCHEMA_VERSION  # noqa: E402

# Bump when the generated log changes: the cache file name carries it.
BUILD_VERSION = 1
LADDER = "backgammon"
LENGTHS = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
LENGTH_P = np.array([30, 2, 15, 2, 20, 2, 15, 2, 5, 2, 5], dtype=float) / 100


def plain(ladder: LadderConfig, ids: dict[str, int]) -> PlainReplay:
    """The ladder's plain replay, the fast path of ``matchlobby replay``."""
    replay = plain_replay(ladder, ids)
    assert replay is not None
    return replay


def player_names(players: int) -> list[str]:
    """Mixed case, so that ordering by ``str.casefold`` differs from plain ordering."""
    return [("p", "Q", "q", "P")[i % 4] + f"{i:05d}" for i in range(players)]


async def _migrate(db: Path) -> None:
    conn = open_connection(db)
    try:
        await migrate_all(conn, Config())
    finally:
        conn.close()


def build_log(db: Path, matches: int, players: int, seed: int) -> dict[str, int]:
    """Write the match log (no ratings, no history) into a fresh database ``db``."""
    asyncio.run(_migrate(db))
    rng = np.random.default_rng(seed)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous=OFF")  # set-up only; the server uses FULL
    created = "2024-01-01T00:00:00Z"
    names = player_names(players)
    conn.executemany(
        "INSERT INTO players (id, name, name_key, role, created_at) VALUES (?, ?, ?, 'player', ?)",
        [(i + 1, n, n.casefold(), created) for i, n in enumerate(names)])
    admin = players + 1
    conn.execute("INSERT INTO players (id, name, name_key, role, created_at) "
                 "VALUES (?, 'director', 'director', 'admin', ?)", (admin, created))

    # The rows in seq order: rated matches with voided ones mixed in, then ids shuffled locally.
    voided = matches * 3 // 1000
    with_seq = matches + voided
    strength = rng.normal(0.0, 300.0, players)
    activity = rng.lognormal(0.0, 1.0, players)
    activity /= activity.sum()
    first = rng.choice(players, with_seq, p=activity)
    second = rng.choice(players, with_seq, p=activity)
    clash = first == second
    second[clash] = (second[clash] + 1 + rng.integers(0, players - 1, int(clash.sum()))) % players
    length = rng.choice(LENGTHS, with_seq, p=LENGTH_P)
    diff = strength[first] - strength[second]
    a_won = rng.random(with_seq) < 1.0 / (np.power(10.0, -diff * np.sqrt(length) / 2000.0) + 1.0)
    scored = rng.random(with_seq) < 0.5
    in_event = rng.random(with_seq) < 0.02
    scored |= in_event
    loser_score = (rng.random(with_seq) * length).astype(np.int64)
    is_void = np.zeros(with_seq, dtype=bool)
    is_void[rng.choice(with_seq, voided, replace=False)] = True
    flipped = (rng.random(with_seq) < 0.002) & ~is_void
    # Unrated rows without seq, spread over the same time: aborted and unlimited matches.
    extra = matches * 7 // 1000
    extra_at = np.sort(rng.integers(0, with_seq, extra))
    order = np.argsort(np.arange(with_seq) + rng.integers(0, 64, with_seq), kind="stable")
    match_id = np.empty(with_seq, dtype=np.int64)
    match_id[order] = np.arange(1, with_seq + 1)
    extra_id = np.arange(with_seq + 1, with_seq + extra + 1)

    events = 100
    start = datetime(2024, 1, 1, tzinfo=UTC)
    span = 2 * 365 * 86400
    step = span / max(1, with_seq)
    conn.executemany(
        "INSERT INTO events (id, name, ladder, date, status, created_at, closed_at) "
        "VALUES (?, ?, ?, ?, 'closed', ?, ?)",
        [(e + 1, f"Club night {e + 1}", LADDER,
          (start + timedelta(seconds=span * e / events)).date().isoformat(),
          (start + timedelta(seconds=span * e / events)).strftime("%Y-%m-%dT%H:%M:%SZ"),
          (start + timedelta(seconds=span * (e + 1) / events)).strftime("%Y-%m-%dT%H:%M:%SZ"))
         for e in range(events)])

    def stamp(i: float) -> tuple[str, str]:
        t = start + timedelta(seconds=i * step)
        return t.strftime("%Y-%m-%dT%H:%M:%SZ"), t.date().isoformat()

    rows = []
    mp_rows = []
    corrections = []
    for i in range(with_seq):
        a, b, n = int(first[i]), int(second[i]), int(length[i])
        won = bool(a_won[i])
        at, day = stamp(i)
        mid = int(match_id[i])
        event_id = int(i * events // with_seq) + 1 if in_event[i] else None
        if scored[i]:
            sa, sb = (n, int(loser_score[i])) if won else (int(loser_score[i]), n)
        else:
            sa = sb = None
        how = "event" if event_id else ("confirm" if scored[i] else "resign")
        winner = "a" if won else "b"
        status = "finished"
        if is_void[i]:
            status = "voided"
            corrections.append((mid, "void", "finished", winner, "voided", None, "wrong players",
                                admin, at))
            winner = None
        elif flipped[i]:
            new = "b" if won else "a"
            corrections.append((mid, "adjudicate", "finished", winner, "finished", new, None,
                                admin, at))
            winner = new
            if sa is not None:
                sa, sb = sb, sa
        rows.append((mid, LADDER, event_id, names[a], names[b], n, day, status, winner, sa, sb,
                     how, i + 1, at, at))
        mp_rows.append((mid, a + 1, "a"))
        mp_rows.append((mid, b + 1, "b"))
    for k, i in enumerate(extra_at.tolist()):
        a, b = int(first[i]), int(second[(i + 1) % with_seq])
        if a == b:
            b = (b + 1) % players
        at, day = stamp(i)
        mid = int(extra_id[k])
        if k % 3:
            rows.append((mid, LADDER, None, names[a], names[b], int(length[i]), day, "aborted",
                         None, None, None, "abort", None, at, at))
        else:
            rows.append((mid, LADDER, None, names[a], names[b], None, day, "finished", "a",
                         None, None, "resign", None, at, at))
        mp_rows.append((mid, a + 1, "a"))
        mp_rows.append((mid, b + 1, "b"))
    rows.sort()
    mp_rows.sort()
    conn.executemany(
        "INSERT INTO matches (id, ladder, event_id, side_a, side_b, length, played_on, status, "
        "winner, score_a, score_b, how, seq, created_at, finished_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)",
                     mp_rows)
    conn.executemany(
        "INSERT INTO corrections (match_id, kind, old_status, old_winner, new_status, new_winner, "
        "reason, by_player, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", corrections)
    conn.execute("UPDATE counters SET value = ? WHERE name = 'seq'", (with_seq,))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {"rated": matches, "voided": voided, "adjudicated": int(flipped.sum()),
            "unrated": extra, "events": int(in_event[~is_void].sum())}


def run_cli(db: Path, *extra: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    t = time.perf_counter()
    done = subprocess.run([*matchlobby_command(), "replay", "--db", str(db), *extra], text=True,
                          capture_output=True, env=bench_env(), cwd=db.parent, check=False)
    return time.perf_counter() - t, done


def cached_database(args: argparse.Namespace) -> Path:
    """The log with ratings and history filled by one ``matchlobby replay`` (built once)."""
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / (f"replay-v{BUILD_VERSION}-schema{SCHEMA_VERSION}-{args.matches}m-"
                    f"{args.players}p-seed{args.seed}.db")
    if path.exists() and not args.rebuild:
        print(f"set-up: cached database {path}")
        return path
    part = path.with_suffix(".part")
    for p in (part, Path(f"{part}-wal"), Path(f"{part}-shm")):
        p.unlink(missing_ok=True)
    t = time.perf_counter()
    counts = build_log(part, args.matches, args.players, args.seed)
    print(f"set-up: {counts['rated']:,} rated matches ({counts['events']:,} of them event "
          f"results, {counts['adjudicated']:,} adjudicated), {counts['voided']:,} voided, "
          f"{counts['unrated']:,} aborted or unlimited, among {args.players:,} players: "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    seconds, done = run_cli(part)
    if done.returncode:
        raise SystemExit(f"matchlobby replay failed while filling the ratings:\n{done.stderr}")
    print(f"set-up: ratings and history filled by `matchlobby replay`: {seconds:.1f} s",
          flush=True)
    conn = sqlite3.connect(part)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    part.rename(path)
    return path


def load_matches(db: Path) -> list[tuple[str, str, int, bool]]:
    """The rated matches in ``seq`` order as plain tuples (winner from scores, else ``winner``)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT side_a, side_b, length, winner, score_a, score_b FROM matches "
            "WHERE ladder = ? AND status = 'finished' AND seq IS NOT NULL ORDER BY seq",
            (LADDER,)).fetchall()
    finally:
        conn.close()
    return [(a, b, n, (sa > sb) if sa is not None and sb is not None else w == "a")
            for a, b, n, w, sa, sb in rows]


def formula_alone(matches: list[tuple[str, str, int, bool]]) -> tuple[float, float]:
    """Seconds for ``rate_match`` over every match in order, and a checksum of the ratings."""
    rate_match = fibs.rate_match
    options = fibs.FibsOptions()
    new = fibs.FibsRating(options.start_rating)
    ratings: dict[str, fibs.FibsRating] = {}
    get = ratings.get
    t = time.perf_counter()
    for a, b, n, a_won in matches:
        ra, rb = get(a, new), get(b, new)
        if a_won:
            ratings[a], ratings[b] = rate_match(ra, rb, n, options)
        else:
            ratings[b], ratings[a] = rate_match(rb, ra, n, options)
    seconds = time.perf_counter() - t
    return seconds, sum(r.rating for r in ratings.values())


# The rewrites timed each round: (what is out of step, the share of the stored history from the
# first row out of step to the end). ``matchlobby replay`` keeps the rows that agree with the log
# and writes the rest, so each case writes about that share of the 2M history rows.
REWRITES = (("all rows agree", 0.0), ("the last 1 % differs", 0.01),
            ("no row agrees", 1.0))


def put_out_of_step(db: Path, rows: int, share: float) -> None:
    """Change one stored history value so that the last ``share`` of the rows must be rewritten.

    The rewrite puts the value back: the stored values are then byte-identical
    to those before (ids included), which the bench checks.
    """
    if not share:
        return
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("UPDATE history SET after = after + 1 WHERE id = (SELECT id FROM history "
                         "ORDER BY id LIMIT 1 OFFSET ?)", (int(rows * (1 - share)),))
    finally:
        conn.close()


def digest(db: Path) -> tuple[str, int, int]:
    """A digest of every stored rating and history value (``repr``: exact floats and types)."""
    h = hashlib.sha256()
    conn = sqlite3.connect(db)
    try:
        ratings = history = 0
        for row in conn.execute("SELECT * FROM ratings ORDER BY ladder, player_id"):
            h.update(repr(row).encode())
            ratings += 1
        for row in conn.execute("SELECT * FROM history ORDER BY id"):
            h.update(repr(row).encode())
            history += 1
    finally:
        conn.close()
    return h.hexdigest(), ratings, history


# The parts of a rewrite of every history row, each timed alone (floor()), in this order.
FLOOR_PARTS = ("log read", "replay", "inserts", "index builds", "commit", "close")


def floor(cached: Path, work: Path) -> tuple[float, ...]:
    """Seconds for each of :data:`FLOOR_PARTS` of a rewrite of every history row, one at a time.

    What ``matchlobby replay`` must do when no stored row agrees, taken
    apart and run with its own code on a copy of the database whose
    history was emptied first (not timed): read the FIBS log into memory;
    replay it (``PlainReplay.pairs``, the formula included; the rows consumed
    as they come, as the rewrite does, then made again untimed); then, in one
    transaction with the rewrite's pragmas, drop the history indexes,
    insert the rows a chunk at a time as the rewrite does, build the
    indexes again, commit and close (the close checkpoints the write-ahead
    log). The rewrite overlaps the log read with the rest (the helper
    process) and the replay with the inserts, but none of these with the
    index builds, the commit or the close, all on its one connection: the
    sum less the log read is what it takes with this schema unless some of
    these parts run at the same time.
    """
    db = work / "floor.db"
    shutil.copyfile(cached, db)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for pragma in (*PRAGMAS, CACHE_PRAGMA, *REWRITE_PRAGMAS):
            conn.execute(pragma)
        conn.execute("DELETE FROM history")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        ids = dict(conn.execute("SELECT name, id FROM players"))
        ladder = next(x for x in default_ladders() if x.name == LADDER)
        seconds = []
        t = time.perf_counter()
        log = list(fetched(match_log(conn, LADDER)))
        seconds.append(time.perf_counter() - t)
        t = time.perf_counter()
        deque(plain(ladder, ids).pairs(log), maxlen=0)  # consumed, as a rewrite does
        seconds.append(time.perf_counter() - t)
        pairs = list(plain(ladder, ids).pairs(log))  # for the inserts, not timed
        del log
        conn.execute("BEGIN IMMEDIATE")
        indexes = _history_indexes(conn, 2 * len(pairs), 2 * len(pairs))
        for index, _ in indexes:
            conn.execute(f'DROP INDEX "{index}"')
        t = time.perf_counter()
        for i in range(0, len(pairs), CHUNK // 2):
            _insert_history(conn, LADDER, pairs[i:i + CHUNK // 2])
        seconds.append(time.perf_counter() - t)
        t = time.perf_counter()
        for _, statement in indexes:
            conn.execute(statement)
        seconds.append(time.perf_counter() - t)
        t = time.perf_counter()
        conn.execute("COMMIT")
        seconds.append(time.perf_counter() - t)
    finally:
        t = time.perf_counter()
        conn.close()
        seconds.append(time.perf_counter() - t)
    db.unlink()
    return tuple(seconds)


def database_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the million-match database (built once, cached), which the evaluate
    benches share."""
    p.add_argument("--matches", type=int, default=1_000_000, help="rated matches (1,000,000)")
    p.add_argument("--players", type=int, default=20_000, help="players (20,000)")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "matchlobby-bench"),
                   help="where the built database is kept (default: $TMPDIR/matchlobby-bench)")
    p.add_argument("--rebuild", action="store_true", help="build the database even if cached")
    p.add_argument("--tmp", default=None, help="parent of the work directory")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    database_arguments(p)
    p.add_argument("--repeat", type=int, default=2, help="rounds (2)")
    p.add_argument("--no-floor", action="store_true",
                   help="skip timing the parts of a rewrite of every row alone (floor())")
    args = p.parse_args()

    cached = cached_database(args)
    work = Path(tempfile.mkdtemp(prefix="bench-replay-", dir=args.tmp))
    db = work / "lobby.db"
    try:
        t = time.perf_counter()
        shutil.copyfile(cached, db)
        print(f"set-up: copied to {db} ({db.stat().st_size / 2**20:.0f} MiB): "
              f"{time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        matches = load_matches(db)
        print(f"baseline load (not timed in the baseline): {len(matches):,} matches into lists "
              f"in {time.perf_counter() - t:.2f} s")
        before = digest(db)
        print(f"stored: {before[1]:,} ratings rows, {before[2]:,} history rows", flush=True)
        rounds: list[tuple[float, ...]] = []
        failures = 0
        for k in range(args.repeat):
            base, _ = formula_alone(matches)
            check_s, done = run_cli(db, "--check")
            if done.returncode:
                failures += 1
                print(f"round {k + 1}: replay --check exit {done.returncode}:\n"
                      f"{(done.stdout + done.stderr)[-3000:]}")
            seconds = []
            for case, share in REWRITES:
                put_out_of_step(db, before[2], share)
                rewrite_s, rewritten = run_cli(db)
                if rewritten.returncode:
                    raise SystemExit(f"matchlobby replay failed:\n{rewritten.stderr}")
                same = digest(db) == before
                failures += not same
                seconds.append(rewrite_s)
                print(f"round {k + 1}: replay, {case}: {rewrite_s:.2f} s; "
                      f"{rewritten.stdout.strip().split('; ')[-1]}; stored values after it "
                      f"{'byte-identical' if same else 'DIFFERENT'}", flush=True)
            base2, _ = formula_alone(matches)
            mean_base = (base + base2) / 2
            rounds.append((mean_base, check_s, *seconds))
            print(f"round {k + 1}: baseline {base:.2f} / {base2:.2f} s; ratios: replay --check "
                  f"{check_s / mean_base:.2f} (exit {done.returncode}), "
                  + ", ".join(f"replay ({case}) {t / mean_base:.2f}"
                              for (case, _), t in zip(REWRITES, seconds, strict=True)),
                  flush=True)
        final_s, done = run_cli(db, "--check")
        if done.returncode:
            failures += 1
        print(f"after the last rewrite: replay --check {final_s:.2f} s (exit {done.returncode})")
        parts: tuple[float, ...] = ()
        floor_base = 0.0
        if not args.no_floor:
            base, _ = formula_alone(matches)
            parts = floor(cached, work)
            base2, _ = formula_alone(matches)
            floor_base = (base + base2) / 2
            print("floor: the parts of a rewrite of every row, each alone: "
                  + ", ".join(f"{name} {t:.2f} s" for name, t in zip(FLOOR_PARTS, parts,
                                                                      strict=True))
                  + f"; baseline {base:.2f} / {base2:.2f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    n = len(matches)
    base = statistics.median(r[0] for r in rounds)
    print()
    print("| command | matches | seconds (median) | matches/s | ratio to the formula alone (median) "
          "| ratios |")
    print("|---|---:|---:|---:|---:|---|")
    print(f"| FIBS formula alone (`rate_match`, in memory) | {n:,} | {base:.2f} | {n / base:,.0f} "
          f"| 1.00 | |")
    labels = ["replay --check", *(f"replay ({case})" for case, _ in REWRITES)]
    for i, label in enumerate(labels, start=1):
        seconds = statistics.median(r[i] for r in rounds)
        ratio = statistics.median(r[i] / r[0] for r in rounds)
        print(f"| `matchlobby {label}` | {n:,} | {seconds:.2f} | {n / seconds:,.0f} | {ratio:.2f} | "
              f"{', '.join(f'{r[i] / r[0]:.2f}' for r in rounds)} |")
    for i, label in enumerate(labels, start=1):
        ratio = statistics.median(r[i] / r[0] for r in rounds)
        print(f"{label}: target ≤ 3×: {'met' if ratio <= 3 else 'missed'} ({ratio:.2f}×)")
    if parts:
        # Everything but the log read (which the rewrite hands to its helper process) is on the
        # rewrite's one connection, one part after another.
        serial = sum(parts[1:]) / floor_base
        storage = sum(parts[2:]) / floor_base
        print("floor ratios to the formula alone: " + ", ".join(
            f"{name} {t / floor_base:.2f}" for name, t in zip(FLOOR_PARTS, parts, strict=True))
            + f"; writing alone (inserts to close) {storage:.2f}; replay to close, one after "
            f"the other as the rewrite runs them {serial:.2f}")
    if failures:
        print(f"CORRECTNESS: {failures} failure(s) (check exit status or changed values)")
        raise SystemExit(1)
    print("correctness: every --check passed; every rewrite left the stored values byte-identical")


if __name__ == "__main__":
    main()
