"""``matchlobby replay``: recompute every ladder from the match log, check or rewrite.

Each ladder is replayed with :func:`ratings_plugin.plugin.replay_ladder` over
:func:`server.log.ladder_units`, except a FIBS ladder of single matches (every
FIBS ladder the server writes), which takes the fast path
(:class:`ratings_plugin.fibs_replay.FibsReplay`): the log is streamed from a
synchronous cursor in ``seq`` order and the history rows are compared with
the stored ones (``--check``) or written (rewrite: :func:`_insert_history`,
from the first match where the stored rows stop agreeing:
:func:`_rewrite_fibs`) a chunk at a time, never all held at once. Both paths give the
same rows, bit for bit; a log row the fast path does not take sends that
ladder back to the generic path (a rewrite rolls back and begins again:
:func:`rewrite`). A rewrite that replaces a large share of ``history`` drops
its indexes and builds them again afterwards (:func:`_history_indexes`).

The fast path uses the ``sqlite3`` connection under the ``aiosqlite`` one
(opened with ``check_same_thread=False``), on this thread, only between awaited
statements, so the two never use it at once; it is the same connection, hence
the same transaction and snapshot.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain, islice
from typing import Any, TextIO

import aiosqlite

from ratings_plugin.fibs_replay import FibsLogRow, FibsReplay, HistoryPair, NotPlainFibs
from ratings_plugin.plugin import (
    INSERT_HISTORY,
    UPSERT,
    RatingRow,
    rating_row,
    replay_ladder,
    write_ladder,
)
from server import peklo_store
from server.config import Config, Ladder
from server.dbcheck import check_database, problem
from server.log import (
    FROM_THE_START,
    fetched,
    fibs_log,
    fibs_log_query,
    has_event_units,
    ladder_units,
)
from server.replay_helper import (
    CHUNK,
    ReplayHelper,
    StoredChunk,
    digest_pairs,
    writers_held,
)
from server.storage import connect, migrate

# A ratings row's values as compared, and Peklo's (stored apart: server/peklo_store.py) last.
RATING_COLUMNS = ("rating", "games", "experience", "paluba", "dansa", "last_played")
COMPARED = (*RATING_COLUMNS, "peklo")
STORED_RATINGS = ("SELECT ladder, player_id, rating, games, experience, paluba, dansa, "
                  "last_played FROM ratings WHERE ladder = ? ORDER BY player_id")
STORED_HISTORY = ("SELECT ladder, player_id, before, after, match_id, event_id, at FROM history "
                  "WHERE ladder = ? ORDER BY id")
# A FIBS ladder's stored history in id order, as the fast path compares it: player, before,
# after, match, and whether the row's event or time differs from its match's (the replayed rows
# take both from their match). {scan} is "" or "NOT INDEXED" (_scan).
STORED_FIBS_ROWS = """SELECT h.player_id, h.before, h.after, h.match_id,
    (h.event_id IS NOT m.event_id OR h.at IS NOT m.finished_at)
    FROM history h {scan} LEFT JOIN matches m ON m.id = h.match_id
    WHERE h.ladder = ? ORDER BY h.id"""
# The same from a given id on: the stored rows of one chunk.
STORED_FIBS_CHUNK = STORED_FIBS_ROWS.replace("ORDER BY", "AND h.id >= ? ORDER BY") + " LIMIT ?"
# From this many history rows (the table's largest id) the stored side of a FIBS ladder is read by
# the helper process (server/replay_helper.py); below it, starting one costs more than it saves.
HELPER_MIN_ROWS = 200_000
PAIRS_PER_INSERT = 50  # matches whose history rows go in one INSERT (_insert_history)
# A ladder rewrite smaller than this keeps the history indexes up to date (see _history_indexes).
REBUILD_MIN_ROWS = 20_000
# For the replay's own connection only: room for the history indexes while they are rewritten.
CACHE_PRAGMA = "PRAGMA cache_size = -262144"  # KiB: 256 MiB
# --check only: read the file's pages through a memory map (SQLite maps it read-only) instead of a
# read() and a copy each. --check reads the log and the whole history once: a million matches on
# the bench machine, six runs alternating, medians 10.4 s against 11.6 s. The rewrite, which
# writes most of what it reads, gained nothing from it.
CHECK_PRAGMA = "PRAGMA mmap_size = 1073741824"  # bytes: 1 GiB of address space
REWRITE_PRAGMAS = (
    # This SQLite is built with SECURE_DELETE: every deleted row and dropped
    # index page is zeroed and written out. FAST still overwrites deleted
    # content where that costs no extra I/O.
    "PRAGMA secure_delete = FAST",
    # With enforcement on, SQLite deletes a child table's rows one by one, even
    # without a WHERE (1.3-1.8 s for 2M history rows against 0.15 s on the bench
    # machine). The rewrite only deletes rows nothing refers to (ratings, Peklo
    # values, history) and inserts rows whose player ids it read from
    # ``players`` inside the same write transaction, so no key can dangle.
    "PRAGMA foreign_keys = OFF",
)


def _raw(conn: aiosqlite.Connection) -> sqlite3.Connection:
    """The ``sqlite3`` connection under ``conn`` (see the module's docstring)."""
    return conn._conn


def _fast(conn: aiosqlite.Connection, ladder: Ladder) -> bool:
    """Whether ``ladder`` can take the FIBS fast path (it may still fall back on a row)."""
    options = ladder.options
    return options.system == "fibs" and not has_event_units(_raw(conn), ladder.name)


async def _ids(conn: aiosqlite.Connection) -> dict[str, int]:
    async with conn.execute("SELECT id, name FROM players") as cur:
        return {row["name"]: row["id"] async for row in cur}


# The replayed ratings rows and Peklo values (player id → value) of a ladder.
Replayed = tuple[list[RatingRow], dict[int, float]]


async def _generic(conn: aiosqlite.Connection, ladder: Ladder, ids: Mapping[str, int]
                   ) -> tuple[Replayed, list[Any]]:
    units = await ladder_units(conn, ladder.name)
    book, history = replay_ladder(ladder.name, ladder.options, units, ids)
    ratings = sorted(rating_row(ladder.name, s, ids) for s in book.standings.values())
    return (ratings, {ids[p]: s.peklo for p, s in book.standings.items()}), history


# ---- --check ----------------------------------------------------------------------------------


HistoryCheck = tuple[bool, int, int]  # (the same?, stored rows, replayed rows)


def _stored_here(raw: sqlite3.Connection, ladder: str, scan: str
                 ) -> Generator[StoredChunk, None, None]:
    """The ladder's stored rows a chunk at a time, read on this connection (no helper)."""
    cur = raw.cursor()
    cur.row_factory = None
    cur.execute(STORED_FIBS_ROWS.format(scan=scan), (ladder,))
    try:
        while rows := cur.fetchmany(CHUNK):
            yield StoredChunk(len(rows), values=rows)
    finally:
        cur.close()


@contextlib.contextmanager
def _ladder_streams(raw: sqlite3.Connection, ladder: str, scan: str, helper: ReplayHelper | None
                    ) -> Iterator[tuple[Iterator[FibsLogRow], Iterator[StoredChunk]]]:
    """The ladder's log rows, and its stored chunks from the helper or read on this connection."""
    if helper is not None and helper.alive:  # asked first: it reads while this one reads the log
        chunks = helper.ladder(ladder, scan, CHUNK)
        log = fibs_log(raw, ladder)
        try:
            yield fetched(log), chunks
        finally:
            log.close()
        return
    log = fibs_log(raw, ladder)
    stored = _stored_here(raw, ladder, scan)
    try:
        yield fetched(log), stored
    finally:
        stored.close()
        log.close()


def _agreeing(raw: sqlite3.Connection, ladder: str, scan: str, pairs: Iterator[HistoryPair],
              chunks: Iterator[StoredChunk]) -> tuple[int, list[HistoryPair]]:
    """How many stored rows, from the first, agree with the replayed ``pairs``; and the pairs
    replayed past them (those of the chunk holding the first difference).

    A stored row agrees when it equals the replayed row (player, before,
    after, match) and its event and time are its match's, as the replayed
    row's are. A chunk whose digest matches the replayed rows' agrees
    whole; in any other, the stored rows are read and compared one by one.
    ``pairs`` is consumed up to the end of that chunk (all of it if every
    row agrees).
    """
    agreed = 0
    for chunk in chunks:
        part = list(islice(pairs, CHUNK // 2))
        if (chunk.digest is not None and chunk.rows == 2 * len(part)
                and chunk.digest == digest_pairs(part)):
            agreed += chunk.rows
            continue
        values = chunk.values
        if values is None:
            values = raw.execute(STORED_FIBS_CHUNK.format(scan=scan),
                                 (ladder, chunk.first_id, chunk.rows)).fetchall()
        same = _agreeing_pairs(values, part)
        agreed += 2 * same
        if same < len(part) or chunk.rows != 2 * len(part):
            return agreed, part[same:]
    return agreed, list(islice(pairs, CHUNK // 2))


def _agreeing_pairs(values: Sequence[Sequence[Any]], pairs: Sequence[HistoryPair]) -> int:
    """How many of ``pairs``, from the first, have their two rows in ``values``, in order."""
    for k, (first, before1, after1, second, before2, after2, mid, _, _) in enumerate(pairs):
        if (2 * k + 1 >= len(values) or tuple(values[2 * k]) != (first, before1, after1, mid, 0)
                or tuple(values[2 * k + 1]) != (second, before2, after2, mid, 0)):
            return k
    return len(pairs)


def _check_fibs(raw: sqlite3.Connection, ladder: Ladder, ids: Mapping[str, int],
                helper: ReplayHelper | None) -> tuple[Replayed, HistoryCheck]:
    """The generic check's comparison of the history, row for row (:func:`_agreeing`).

    A fast-path history row is (ladder, player, before, after, match, event,
    at) with the event and the time of its match as logged. So the ``WHERE``
    makes the ladder equal, SQL checks each stored row's event and time
    against its match, and Python compares the rest: together, the same
    rows in the same order (not making 2M ``at`` strings and ladder names in
    Python saves ~1 s of a million-match check on the bench machine). With a
    helper, the stored rows are read on the other core, and here only in a
    chunk whose digests differ.
    """
    replay = FibsReplay(ladder.name, ladder.options, ids)
    old, total = _history_rows(raw, ladder.name)
    scan = _scan(old, total)
    with _ladder_streams(raw, ladder.name, scan, helper) as (log, chunks):
        pairs = replay.pairs(log)
        agreed, head = _agreeing(raw, ladder.name, scan, pairs, chunks)
        replayed = agreed + 2 * len(head) + 2 * sum(1 for _ in pairs)
    # FIBS: every Peklo value is the default
    return (replay.rating_rows(), {}), (agreed == old == replayed, old, replayed)


def _scan(rows: int, total: int) -> str:
    """``NOT INDEXED`` when a ladder of ``rows`` has at least half the ``total`` of ``history``.

    Through ``history_ladder`` each row costs a search of the table by id;
    reading the whole table in id order and skipping the other ladders' rows
    costs none. For a ladder of all 2M rows on the bench machine: reading them
    1.45 s against 1.85 s, the SQL pass over events and times 0.65 s against
    0.85 s, for 0.2 s of counting.
    """
    return "NOT INDEXED" if 2 * rows >= total else ""


async def _check_ladder(conn: aiosqlite.Connection, ladder: Ladder, ids: Mapping[str, int],
                        helper: ReplayHelper | None) -> tuple[Replayed, HistoryCheck]:
    if _fast(conn, ladder):
        try:
            return _check_fibs(_raw(conn), ladder, ids, helper)
        except NotPlainFibs:
            pass
    replayed, history = await _generic(conn, ladder, ids)
    stored_history = [tuple(r) for r in await (await conn.execute(
        STORED_HISTORY, (ladder.name,))).fetchall()]
    return replayed, (stored_history == [tuple(h) for h in history], len(stored_history),
                     len(history))


def _helper(config: Config, raw: sqlite3.Connection) -> ReplayHelper | None:
    """A helper process for the stored side, when the history is big enough to pay for one."""
    largest = raw.execute("SELECT max(id) FROM history").fetchone()[0]
    if (largest or 0) < HELPER_MIN_ROWS:
        return None
    try:
        return ReplayHelper(os.path.abspath(config.database))
    except OSError:
        return None


async def check(conn: aiosqlite.Connection, config: Config, out: TextIO) -> int:
    """Compare stored ratings and history with the replayed ones; the number of differences."""
    helper = _helper(config, _raw(conn))
    try:
        return await _check(conn, config, out, helper)
    finally:
        if helper is not None:
            helper.close()


async def _check(conn: aiosqlite.Connection, config: Config, out: TextIO,
                 helper: ReplayHelper | None) -> int:
    if helper is None:
        await conn.execute("BEGIN")  # one snapshot for the whole comparison
    else:
        # The same snapshot for this connection and the helper: no commit can come between.
        with writers_held(config.database):
            await conn.execute("BEGIN")
            await (await conn.execute("SELECT count(*) FROM sqlite_master")).fetchone()
            if not helper.snapshot():
                helper = None
    try:
        ids = await _ids(conn)
        expected = {ladder.name: await _check_ladder(conn, ladder, ids, helper)
                    for ladder in config.ladders}
        names = {pid: name for name, pid in ids.items()}
        stored_peklo = peklo_store.by_ladder(await (await conn.execute(
            peklo_store.SELECT)).fetchall())
        problems = 0
        for ladder, ((ratings, peklos), (same, n_stored, n_replayed)) in expected.items():
            values = stored_peklo.get(ladder, {})
            stored = {
                r["player_id"]: (*(r[c] for c in RATING_COLUMNS),
                                 values.get(r["player_id"], peklo_store.DEFAULT))
                for r in await (await conn.execute(
                    "SELECT * FROM ratings WHERE ladder = ?", (ladder,))).fetchall()
            }
            replayed = {row[1]: (*row[2:], peklos.get(row[1], peklo_store.DEFAULT))
                        for row in ratings}
            for pid in sorted(set(stored) | set(replayed)):
                a, b = stored.get(pid), replayed.get(pid)
                if a != b:
                    problems += 1
                    print(f"{ladder}: {names.get(pid, pid)}: stored {_show(a)}, "
                          f"replayed {_show(b)}", file=out)
            for pid in sorted(set(values) - set(stored)):
                problems += 1
                print(f"{ladder}: {names.get(pid, pid)}: a stored Peklo value "
                      f"({values[pid]}) without a rating", file=out)
            if not same:
                problems += 1
                print(f"{ladder}: rating history differs from the log "
                      f"({n_stored} stored rows, {n_replayed} replayed)", file=out)
        stored_ladders = {row[0] for row in await (await conn.execute(
            "SELECT DISTINCT ladder FROM ratings")).fetchall()} | set(stored_peklo)
        for ladder in sorted(stored_ladders - set(expected)):
            print(f"{ladder}: stored ratings for a ladder that is not configured", file=out)
            problems += 1
    finally:
        await conn.execute("ROLLBACK")
    return problems


def _show(values: tuple[Any, ...] | None) -> str:
    if values is None:
        return "nothing"
    return ", ".join(f"{c} {v}" for c, v in zip(COMPARED, values, strict=True))


# ---- rewrite ----------------------------------------------------------------------------------


def _history_rows(raw: sqlite3.Connection, ladder: str) -> tuple[int, int]:
    """This ladder's rows of ``history`` and the table's."""
    old = raw.execute("SELECT count(*) FROM history WHERE ladder = ?", (ladder,)).fetchone()[0]
    return old, raw.execute("SELECT count(*) FROM history").fetchone()[0]


def _history_indexes(raw: sqlite3.Connection, churn: int, after: int) -> list[tuple[str, str]]:
    """The indexes of ``history`` (name, ``CREATE INDEX``) when rebuilding them beats keeping them.

    ``churn`` is the rows the rewrite deletes and inserts, ``after`` the
    table's rows once it is done. Keeping an index up to date costs a B-tree
    search per deleted and per inserted row (``history_player`` is in player
    order, so its pages are visited at random: ~40 s for a million-match
    ladder on the bench machine); building it again sorts the whole table
    once (~4 s). Rebuilding pays off when the churn is a good share of the
    table: here, at least a quarter of it after the rewrite. The statements
    are read back from ``sqlite_master``, so the indexes come back exactly as
    the schema made them; DDL is transactional, so a rollback brings them
    back too.
    """
    if churn < REBUILD_MIN_ROWS or 4 * churn < after:
        return []
    return [(row[0], row[1]) for row in raw.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'history' "
        "AND sql IS NOT NULL ORDER BY rowid")]


@dataclass
class _Agreed:
    """How much of a ladder's stored history the replay found right (:func:`_agreed_prefix`).

    ``rows`` stored rows (two a match) agree with the replay from the first
    on; ``head`` holds the replayed matches not yet written, and ``resume``
    the ``seq`` after which the log is read on (``FROM_THE_START``, 0, for
    the whole log; ``None`` when the log is done).
    """

    rows: int
    head: list[HistoryPair]
    resume: int | None


def _agreed_prefix(raw: sqlite3.Connection, ladder: str, replay: FibsReplay, old: int,
                   total: int, helper: ReplayHelper | None) -> _Agreed:
    """Replay the log while it agrees with the stored history, as ``--check`` compares them.

    Stops at the chunk holding the first match whose two rows differ from
    the stored ones in any column (or are missing). The matches of that
    chunk from there on are replayed already (``replay`` holds the state
    after them), so they are handed over with the ``seq`` to go on from, and
    the log's cursor is closed: the rewrite may drop indexes, which SQLite
    refuses while a statement is reading.
    """
    if not old:
        return _Agreed(0, [], FROM_THE_START)
    scan = _scan(old, total)
    with _ladder_streams(raw, ladder, scan, helper) as (log, chunks):
        agreed, head = _agreeing(raw, ladder, scan, replay.pairs(log), chunks)
    if not head:
        return _Agreed(agreed, [], None)
    seq = raw.execute("SELECT seq FROM matches WHERE id = ?", (head[-1][6],)).fetchone()[0]
    return _Agreed(agreed, head, seq)


def _delete_history(raw: sqlite3.Connection, ladder: str, agreed: int, old: int,
                    total: int) -> None:
    """Delete the ladder's stored rows after the first ``agreed`` (in id order)."""
    if agreed == old:
        return
    if not agreed and old == total:
        # The same rows go, but without a WHERE (and with foreign keys off:
        # REWRITE_PRAGMAS) SQLite frees the table's pages wholesale.
        raw.execute("DELETE FROM history")
    elif not agreed:
        raw.execute("DELETE FROM history WHERE ladder = ?", (ladder,))
    else:
        last = raw.execute("SELECT id FROM history WHERE ladder = ? ORDER BY id LIMIT 1 OFFSET ?",
                           (ladder, agreed - 1)).fetchone()[0]
        raw.execute("DELETE FROM history WHERE ladder = ? AND id > ?", (ladder, last))


@dataclass
class Rewritten:
    """What a ladder's rewrite did: ratings rows written, history rows kept and written."""

    ratings: int = 0
    kept: int = 0
    written: int = 0

    def __iadd__(self, other: Rewritten) -> Rewritten:
        self.ratings += other.ratings
        self.kept += other.kept
        self.written += other.written
        return self


def _rewrite_fibs(raw: sqlite3.Connection, ladder: Ladder, ids: Mapping[str, int],
                  helper: ReplayHelper | None) -> Rewritten:
    """The generic rewrite's result, with only what differs from the stored rows written.

    The history is replayed against the stored rows first
    (:func:`_agreed_prefix`): the rows that agree, from the first on, stay
    as they are (ids included); from the first match that differs, the
    ladder's stored rows are deleted and the replayed ones streamed in
    (:func:`_insert_history`). After the generic rewrite the ladder's rows,
    in id order, are the same; only ids may differ, which nothing reads but
    that order. Auditing a ladder that is right, or mending one whose log
    changed near its end, then writes little or nothing, where writing all
    of a million-match ladder's rows and indexes costs ~7 s on the bench
    machine. The ratings rows are written only if any of them differs.
    """
    name = ladder.name
    replay = FibsReplay(name, ladder.options, ids)
    old, total = _history_rows(raw, name)
    agreed = _agreed_prefix(raw, name, replay, old, total, helper)
    written = 0
    indexes: list[tuple[str, str]] = []
    if agreed.resume is not None:
        new = 2 * raw.execute("SELECT count(*) FROM matches WHERE ladder = ? AND seq IS NOT NULL",
                              (name,)).fetchone()[0]
        indexes = _history_indexes(raw, old + new - 2 * agreed.rows, total - old + new)
    for index, _ in indexes:
        raw.execute(f'DROP INDEX "{index}"')
    _delete_history(raw, name, agreed.rows, old, total)
    if agreed.resume is not None:
        with _log_after(raw, name, agreed.resume, new // 2 - agreed.rows // 2, helper) as log:
            pairs = chain(agreed.head, replay.pairs(log))
            # In chunks: reading the log and writing the history by turns keeps each in the
            # page cache a while (measured ~5 % faster than one executemany over the stream).
            while chunk := list(islice(pairs, CHUNK // 2)):
                _insert_history(raw, name, chunk)
                written += 2 * len(chunk)
    for _, statement in indexes:
        raw.execute(statement)
    rows = replay.rating_rows()
    cur = raw.cursor()
    cur.row_factory = None
    if cur.execute(STORED_RATINGS, (name,)).fetchall() != rows:
        raw.execute("DELETE FROM ratings WHERE ladder = ?", (name,))
        raw.executemany(UPSERT, rows)
    raw.execute(peklo_store.DELETE, (name,))  # FIBS: every value is the default
    return Rewritten(len(rows), agreed.rows, written)


@contextlib.contextmanager
def _log_after(raw: sqlite3.Connection, ladder: str, after: int, matches: int,
               helper: ReplayHelper | None) -> Iterator[Iterator[FibsLogRow]]:
    """The ladder's log after ``after`` (about ``matches`` rows), read by a new helper process
    when there is one and the log is long, else on this connection."""
    # A new process: the helper cannot be stopped in the middle of the stored rows it digests.
    if helper is not None and helper.alive and 2 * matches >= HELPER_MIN_ROWS and helper.restart():
        yield helper.rows(*fibs_log_query(ladder, after))
        return
    log = fibs_log(raw, ladder, after)
    try:
        yield fetched(log)
    finally:
        log.close()


def _insert_history(raw: sqlite3.Connection, ladder: str, pairs: Sequence[HistoryPair]) -> None:
    """The rows of ``pairs`` (two a match, in order), :data:`PAIRS_PER_INSERT` matches a statement.

    The rows ``executemany(INSERT_HISTORY, …)`` would insert, in the same
    order, so with the same ids; but the ``sqlite3`` module's work per
    statement is paid once per 100 rows, and a statement binds the ladder once
    and each match's id, event and time once for its two rows (9 values a
    match instead of 14). 2M rows into an empty table on the bench machine:
    6.0-6.8 s one by one, 4.3-4.7 s 50 rows a statement with every value
    bound, 2.1-3.6 s so.
    """
    for i in range(0, len(pairs), PAIRS_PER_INSERT):
        part = pairs[i:i + PAIRS_PER_INSERT]
        raw.execute(_pairs_insert(len(part)), (ladder, *chain.from_iterable(part)))


@cache
def _pairs_insert(matches: int) -> str:
    """``INSERT_HISTORY`` for the two rows of ``matches`` matches given as ``HistoryPair`` values.

    ``?1`` is the ladder; match ``k`` (from 0) is ``?(2 + 9k)`` to ``?(10 + 9k)``.
    """
    rows = []
    for k in range(matches):
        (first, before1, after1, second, before2, after2, mid, eid, at) = (
            f"?{2 + 9 * k + j}" for j in range(9))
        rows.append(f"(?1, {first}, {before1}, {after1}, {mid}, {eid}, {at})")
        rows.append(f"(?1, {second}, {before2}, {after2}, {mid}, {eid}, {at})")
    columns = INSERT_HISTORY[:INSERT_HISTORY.index("VALUES")]
    return columns + "VALUES " + ", ".join(rows)


async def _rewrite_ladder(conn: aiosqlite.Connection, ladder: Ladder, ids: Mapping[str, int],
                          generic: bool, helper: ReplayHelper | None) -> Rewritten:
    if not generic and _fast(conn, ladder):
        return _rewrite_fibs(_raw(conn), ladder, ids, helper)
    units = await ladder_units(conn, ladder.name)
    book, history = replay_ladder(ladder.name, ladder.options, units, ids)
    ratings = await write_ladder(conn, ladder.name, ladder.options, book.standings.values(), ids)
    await conn.execute("DELETE FROM history WHERE ladder = ?", (ladder.name,))
    await conn.executemany(INSERT_HISTORY, history)
    return Rewritten(len(ratings), 0, len(history))


async def rewrite(conn: aiosqlite.Connection, config: Config) -> Rewritten:
    """Replace ratings and history of every configured ladder with the replayed ones.

    A FIBS ladder on the fast path keeps the stored rows that already agree
    (:func:`_rewrite_fibs`); the others are written whole. One transaction
    for all ladders. When the fast path refuses a row
    (:class:`NotPlainFibs`) after writing part of its ladder, the whole
    transaction is rolled back and begun again with that ladder on the
    generic path. A savepoint around each ladder would keep the other ladders'
    work, but SQLite then copies every page the rewrite changes into a
    statement journal first: 3-6 s of a million-match rewrite on the bench
    machine, paid on every run, while a refusal needs a row that the lobby
    does not log on a FIBS ladder in the usual run of things.

    Sets :data:`REWRITE_PRAGMAS` first, so ``conn`` must be the replay's own
    (they stay set); they change how the rows are written, never which.
    """
    for pragma in REWRITE_PRAGMAS:
        await conn.execute(pragma)
    generic: set[str] = set()
    while True:
        helper = _helper(config, _raw(conn))
        current = None
        try:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                # No commit can come while this transaction holds the write lock:
                # the helper's snapshot is what the transaction starts from.
                reader = helper if helper is not None and helper.snapshot() else None
                ids = await _ids(conn)
                count = Rewritten()
                for ladder in config.ladders:
                    current = ladder.name
                    count += await _rewrite_ladder(conn, ladder, ids, current in generic, reader)
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
        except NotPlainFibs:
            if current is None or current in generic:
                raise
            generic.add(current)
            continue
        finally:
            if helper is not None:
                helper.close()
        return count


async def run(config: Config, check_only: bool, out: TextIO = sys.stdout) -> int:
    """Check (0: all agree, 1: differences, printed) or rewrite (0).

    A file that is not a matchlobby database this code can read raises
    :class:`~server.dbcheck.DatabaseProblem`, and so does any SQLite error while
    replaying: damage on a page it reads, a lock held too long. There is no
    ``quick_check`` first (``startup_check`` is for ``serve`` and ``user add``):
    the replay reads the whole log and history, where nearly all of the file
    is, and a check first would read it all once more (3-4 s of a million
    matches' 10-17 s).
    """
    await check_database(config.database, quick_check=False, writable=not check_only)
    try:
        return await _run(config, check_only, out)
    except sqlite3.Error as e:
        raise problem(config.database, e, "replaying") from None


async def _run(config: Config, check_only: bool, out: TextIO) -> int:
    # check_same_thread=False: the FIBS fast path uses the sqlite3 connection on this thread.
    conn = await connect(config.database, check_same_thread=False)
    try:
        await migrate(conn)
        await conn.execute(CACHE_PRAGMA)
        if check_only:
            await conn.execute(CHECK_PRAGMA)
            problems = await check(conn, config, out)
            if problems:
                print(f"replay --check: {problems} difference(s) between the log and the stored "
                      "ratings", file=out)
                return 1
            print("replay --check: every rating agrees with the match log", file=out)
            return 0
        done = await rewrite(conn, config)
        print(f"replay: rewrote {done.ratings} ratings of {len(config.ladders)} ladders from the "
              f"log; history: {done.kept} rows already agreed and were kept, {done.written} "
              "written", file=out)
        return 0
    finally:
        await conn.close()
