"""``matchlobby replay``: recompute every ladder from the match log, check or rewrite.

Each ladder is replayed through its books (:func:`ratings_plugin.book.replay_ladder`
over the log's units), except a ladder of single matches whose system has a
plain replay (FIBS: every FIBS ladder the lobby writes) on SQLite, which takes
the fast path: the log is streamed from a synchronous cursor in ``seq`` order
and the history rows are compared with the stored ones (``--check``) or written
(rewrite: :func:`_insert_history`, from the first match where the stored rows
stop agreeing: :func:`_rewrite_fast`) a chunk at a time, never all held at
once. Both paths give the same rows, bit for bit; a log row the fast path does
not take sends that ladder back to the books (a rewrite rolls back and begins
again: :func:`rewrite`). A rewrite that replaces a large share of ``history``
drops its indexes and builds them again afterwards (:func:`_history_indexes`).

The fast path uses the ``sqlite3`` connection under the store
(``Store.native()``) on this thread, only between awaited statements, so the
two never use it at once; it is the same connection, hence the same
transaction and snapshot. It reads the log's tables, which the lobby publishes
read-only (``server.api.LOG_TABLES``).
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

import orjson

from ratings_plugin import store
from ratings_plugin.book import replay_ladder
from ratings_plugin.commands.replay_helper import (
    CHUNK,
    ReplayHelper,
    StoredChunk,
    digest_pairs,
    writers_held,
)
from server.api import HistoryPair, LadderConfig, LogRow, NotPlain, PlainReplay, Reader, Store, Tx
from server.api.systems import plain_replay, shared_field

# A ratings row's values as compared (its system's fields decoded), and the shared value last.
COMPARED = ("rating", "games", "last_played", "state", "shared")
STORED_RATINGS = ("SELECT ladder, player_id, rating, games, last_played, state FROM ratings "
                  "WHERE ladder = ? ORDER BY player_id")
# The rated matches of a ladder in seq order, as a PlainReplay reads them (LogRow): the scores
# resolved from the winner when a match has none, as the lobby's log reader does. The
# (ladder, seq) index gives the order.
MATCH_LOG = """SELECT id, event_id, finished_at, side_a, side_b, length,
    CASE WHEN score_a IS NULL OR score_b IS NULL THEN (CASE winner WHEN 'a' THEN 1 ELSE 0 END)
         ELSE score_a END,
    CASE WHEN score_a IS NULL OR score_b IS NULL THEN (CASE winner WHEN 'b' THEN 1 ELSE 0 END)
         ELSE score_b END,
    played_on, unrated_reason
    FROM matches WHERE ladder = ? AND seq IS NOT NULL AND status = 'finished' ORDER BY seq"""
# The same rows from a point of the log on: those after a given seq.
MATCH_LOG_AFTER = MATCH_LOG.replace("ORDER BY seq", "AND seq > ? ORDER BY seq")
EVENT_UNITS = ("SELECT EXISTS (SELECT 1 FROM events WHERE ladder = ? AND status = 'closed' "
               "AND seq IS NOT NULL)")
FETCH_ROWS = 4096
FROM_THE_START = 0  # after seq 0: the whole log (seq numbers start at 1)
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
# the helper process (ratings_plugin/commands/replay_helper.py); below it, starting one costs
# more than it saves.
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


def match_log(raw: sqlite3.Connection, ladder: str, after: int | None = None) -> sqlite3.Cursor:
    """A synchronous cursor streaming :data:`MATCH_LOG` as plain tuples (``after``: only the rows
    whose ``seq`` is greater, where a rewrite goes on from)."""
    cur = raw.cursor()
    cur.row_factory = None
    cur.execute(*match_log_query(ladder, after))
    return cur


def match_log_query(ladder: str, after: int | None = None) -> tuple[str, tuple[Any, ...]]:
    return (MATCH_LOG, (ladder,)) if after is None else (MATCH_LOG_AFTER, (ladder, after))


def fetched(cur: sqlite3.Cursor) -> Iterator[Any]:
    """``cur``'s rows, :data:`FETCH_ROWS` at a time (iterating a cursor costs a call into the
    ``sqlite3`` module per row: over a million-row log, 4.4 s against 3.2 s)."""
    while rows := cur.fetchmany(FETCH_ROWS):
        yield from rows


def _plain(raw: sqlite3.Connection | None, ladder: LadderConfig, ids: Mapping[str, int]
           ) -> PlainReplay | None:
    """The ladder's plain replay, when its system has one, the store is SQLite and the ladder
    has no event units (it may still refuse a row)."""
    if raw is None:
        return None
    plain = plain_replay(ladder, ids)
    if plain is None or raw.execute(EVENT_UNITS, (ladder.name,)).fetchone()[0]:
        return None
    return plain


async def _ids(reader: Reader) -> dict[str, int]:
    return {row[1]: row[0] for row in await reader.fetchall("SELECT id, name FROM players")}


# The replayed ratings rows and shared values (player id → value) of a ladder.
Replayed = tuple[list[store.RatingRow], dict[int, float]]


def _shared(ladder: LadderConfig, standings: Mapping[str, Any], ids: Mapping[str, int]
            ) -> dict[int, float]:
    field = shared_field(ladder.system)
    if field is None:
        return {}
    return {ids[p]: getattr(s, field) for p, s in standings.items()}


async def _generic(tx: Tx, ladder: LadderConfig, ids: Mapping[str, int]
                   ) -> tuple[Replayed, list[Any]]:
    units = await tx.log.units(ladder.name)
    book, history = replay_ladder(ladder, units, ids)
    ratings = sorted(store.rating_rows(ladder, book.standings.values(), ids))
    return (ratings, _shared(ladder, book.standings, ids)), history


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
                    ) -> Iterator[tuple[Iterator[LogRow], Iterator[StoredChunk]]]:
    """The ladder's log rows, and its stored chunks from the helper or read on this connection."""
    if helper is not None and helper.alive:  # asked first: it reads while this one reads the log
        chunks = helper.ladder(ladder, scan, CHUNK)
        log = match_log(raw, ladder)
        try:
            yield fetched(log), chunks
        finally:
            log.close()
        return
    log = match_log(raw, ladder)
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


def _check_fast(raw: sqlite3.Connection, ladder: LadderConfig, plain: PlainReplay,
                ids: Mapping[str, int], helper: ReplayHelper | None
                ) -> tuple[Replayed, HistoryCheck]:
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
    old, total = _history_rows(raw, ladder.name)
    scan = _scan(old, total)
    with _ladder_streams(raw, ladder.name, scan, helper) as (log, chunks):
        pairs = plain.pairs(log)
        agreed, head = _agreeing(raw, ladder.name, scan, pairs, chunks)
        replayed = agreed + 2 * len(head) + 2 * sum(1 for _ in pairs)
    standings = plain.standings()
    ratings = sorted(store.rating_rows(ladder, standings.values(), ids))
    return (ratings, _shared(ladder, standings, ids)), (agreed == old == replayed, old, replayed)


def _scan(rows: int, total: int) -> str:
    """``NOT INDEXED`` when a ladder of ``rows`` has at least half the ``total`` of ``history``.

    Through ``history_ladder`` each row costs a search of the table by id;
    reading the whole table in id order and skipping the other ladders' rows
    costs none. For a ladder of all 2M rows on the bench machine: reading them
    1.45 s against 1.85 s, the SQL pass over events and times 0.65 s against
    0.85 s, for 0.2 s of counting.
    """
    return "NOT INDEXED" if 2 * rows >= total else ""


async def _check_ladder(tx: Tx, raw: sqlite3.Connection | None, ladder: LadderConfig,
                        ids: Mapping[str, int], helper: ReplayHelper | None
                        ) -> tuple[Replayed, HistoryCheck]:
    plain = _plain(raw, ladder, ids)
    if plain is not None and raw is not None:
        try:
            return _check_fast(raw, ladder, plain, ids, helper)
        except NotPlain:
            pass
    replayed, history = await _generic(tx, ladder, ids)
    stored_history = [tuple(r) for r in await tx.fetchall(STORED_HISTORY, (ladder.name,))]
    return replayed, (stored_history == [tuple(h) for h in history], len(stored_history),
                     len(history))


def _helper(database: str, raw: sqlite3.Connection | None) -> ReplayHelper | None:
    """A helper process for the stored side, when the history is big enough to pay for one."""
    if raw is None:
        return None
    largest = raw.execute("SELECT max(id) FROM history").fetchone()[0]
    if (largest or 0) < HELPER_MIN_ROWS:
        return None
    try:
        return ReplayHelper(os.path.abspath(database))
    except OSError:
        return None


async def check(db: Store, database: str, ladders: Sequence[LadderConfig], out: TextIO) -> int:
    """Compare stored ratings and history with the replayed ones; the number of differences."""
    raw = db.native() if db.backend == "sqlite" else None
    helper = _helper(database, raw)
    try:
        async def compare(tx: Tx) -> int:
            nonlocal helper
            if helper is not None:
                # The same snapshot for this connection and the helper: no commit can come
                # between (the snapshot starts at the first read).
                with writers_held(database):
                    await tx.fetchone("SELECT count(*) FROM sqlite_master")
                    if not helper.snapshot():
                        helper = None
            return await _check(tx, raw, ladders, out, helper)

        problems: int = await db.snapshot(compare)
        return problems
    finally:
        if helper is not None:
            helper.close()


async def _check(tx: Tx, raw: sqlite3.Connection | None, ladders: Sequence[LadderConfig],
                 out: TextIO, helper: ReplayHelper | None) -> int:
    ids = await _ids(tx)
    expected = {ladder.name: (ladder, await _check_ladder(tx, raw, ladder, ids, helper))
                for ladder in ladders}
    names = {pid: name for name, pid in ids.items()}
    stored_shared = store.shared_by_ladder(await tx.fetchall(store.SHARED_SELECT))
    problems = 0
    for name, (ladder, ((ratings, shared), (same, n_stored, n_replayed))) in expected.items():
        values = stored_shared.get(name, {})
        default = _default_shared(ladder)
        stored = {
            r[1]: (r[2], r[3], r[4], orjson.loads(r[5]), values.get(r[1], default))
            for r in await tx.fetchall(STORED_RATINGS, (name,))
        }
        replayed = {row[1]: (row[2], row[3], row[4], orjson.loads(row[5]),
                             shared.get(row[1], default)) for row in ratings}
        for pid in sorted(set(stored) | set(replayed)):
            a, b = stored.get(pid), replayed.get(pid)
            if a != b:
                problems += 1
                print(f"{name}: {names.get(pid, pid)}: stored {_show(a)}, "
                      f"replayed {_show(b)}", file=out)
        for pid in sorted(set(values) - set(stored)):
            problems += 1
            print(f"{name}: {names.get(pid, pid)}: a stored shared value "
                  f"({values[pid]}) without a rating", file=out)
        if not same:
            problems += 1
            print(f"{name}: rating history differs from the log "
                  f"({n_stored} stored rows, {n_replayed} replayed)", file=out)
    stored_ladders = {row[0] for row in await tx.fetchall(
        "SELECT DISTINCT ladder FROM ratings")} | set(stored_shared)
    for name in sorted(stored_ladders - set(expected)):
        print(f"{name}: stored ratings for a ladder that is not configured", file=out)
        problems += 1
    return problems


def _default_shared(ladder: LadderConfig) -> float | None:
    """What a player absent from the ladder's shared values has (a new standing's value)."""
    field = shared_field(ladder.system)
    if field is None:
        return None
    value: float = getattr(ladder.system.new_book(ladder.options).new_standing("x"), field)
    return value


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


def _agreed_prefix(raw: sqlite3.Connection, ladder: str, replay: PlainReplay, old: int,
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


def _rewrite_fast(raw: sqlite3.Connection, ladder: LadderConfig, replay: PlainReplay,
                  ids: Mapping[str, int], helper: ReplayHelper | None) -> Rewritten:
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
    standings = replay.standings()
    rows = sorted(store.rating_rows(ladder, standings.values(), ids))
    cur = raw.cursor()
    cur.row_factory = None
    if cur.execute(STORED_RATINGS, (name,)).fetchall() != rows:
        raw.execute("DELETE FROM ratings WHERE ladder = ?", (name,))
        raw.executemany(store.UPSERT, rows)
    raw.execute(store.SHARED_DELETE, (name,))
    if shared_field(ladder.system) is not None and standings:
        raw.execute(store.SHARED_UPSERT, store.shared_row(ladder, standings.values(), ids))
    return Rewritten(len(rows), agreed.rows, written)


@contextlib.contextmanager
def _log_after(raw: sqlite3.Connection, ladder: str, after: int, matches: int,
               helper: ReplayHelper | None) -> Iterator[Iterator[LogRow]]:
    """The ladder's log after ``after`` (about ``matches`` rows), read by a new helper process
    when there is one and the log is long, else on this connection."""
    # A new process: the helper cannot be stopped in the middle of the stored rows it digests.
    if helper is not None and helper.alive and 2 * matches >= HELPER_MIN_ROWS and helper.restart():
        yield helper.rows(*match_log_query(ladder, after))
        return
    log = match_log(raw, ladder, after)
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
    columns = store.INSERT_HISTORY[:store.INSERT_HISTORY.index("VALUES")]
    return columns + "VALUES " + ", ".join(rows)


async def _rewrite_ladder(tx: Tx, raw: sqlite3.Connection | None, ladder: LadderConfig,
                          ids: Mapping[str, int], generic: bool, helper: ReplayHelper | None
                          ) -> Rewritten:
    plain = None if generic else _plain(raw, ladder, ids)
    if plain is not None and raw is not None:
        return _rewrite_fast(raw, ladder, plain, ids, helper)
    units = await tx.log.units(ladder.name)
    book, history = replay_ladder(ladder, units, ids)
    ratings = await store.write_ladder(tx, ladder, book.standings.values(), ids)
    await tx.execute("DELETE FROM history WHERE ladder = ?", (ladder.name,))
    await tx.executemany(store.INSERT_HISTORY, history)
    return Rewritten(len(ratings), 0, len(history))


async def rewrite(db: Store, database: str, ladders: Sequence[LadderConfig]) -> Rewritten:
    """Replace ratings and history of every configured ladder with the replayed ones.

    A ladder on the fast path keeps the stored rows that already agree
    (:func:`_rewrite_fast`); the others are written whole. One transaction
    for all ladders. When the fast path refuses a row (:class:`NotPlain`)
    after writing part of its ladder, the whole transaction is rolled back
    and begun again with that ladder through books. A savepoint around each
    ladder would keep the other ladders' work, but SQLite then copies every
    page the rewrite changes into a statement journal first: 3-6 s of a
    million-match rewrite on the bench machine, paid on every run, while a
    refusal needs a row that the lobby does not log on a FIBS ladder in the
    usual run of things.

    On SQLite sets :data:`REWRITE_PRAGMAS` first, so ``db`` must be the replay's own (they
    stay set); they change how the rows are written, never which.
    """
    raw = db.native() if db.backend == "sqlite" else None
    if raw is not None:
        for pragma in REWRITE_PRAGMAS:
            raw.execute(pragma)
    generic: set[str] = set()
    while True:
        helper = _helper(database, raw)
        current: str | None = None

        async def job(tx: Tx, helper: ReplayHelper | None = helper) -> Rewritten:
            nonlocal current
            # No commit can come while this transaction holds the write lock:
            # the helper's snapshot is what the transaction starts from.
            reader = helper if helper is not None and helper.snapshot() else None
            ids = await _ids(tx)
            count = Rewritten()
            for ladder in ladders:
                current = ladder.name
                count += await _rewrite_ladder(tx, raw, ladder, ids, current in generic, reader)
            return count

        try:
            done: Rewritten = await db.transaction(job)
        except NotPlain:
            if current is None or current in generic:
                raise
            generic.add(current)
            continue
        finally:
            if helper is not None:
                helper.close()
        return done


async def run(db: Store, database: str, ladders: Sequence[LadderConfig], check_only: bool,
              out: TextIO = sys.stdout) -> int:
    raw = db.native() if db.backend == "sqlite" else None
    if raw is not None:
        raw.execute(CACHE_PRAGMA)
    if check_only:
        if raw is not None:
            raw.execute(CHECK_PRAGMA)
        problems = await check(db, database, ladders, out)
        if problems:
            print(f"replay --check: {problems} difference(s) between the log and the stored "
                  "ratings", file=out)
            return 1
        print("replay --check: every rating agrees with the match log", file=out)
        return 0
    done = await rewrite(db, database, ladders)
    print(f"replay: rewrote {done.ratings} ratings of {len(ladders)} ladders from the "
          f"log; history: {done.kept} rows already agreed and were kept, {done.written} "
          "written", file=out)
    return 0
