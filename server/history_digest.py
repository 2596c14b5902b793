"""The stored history of FIBS ladders, read and digested by a helper process beside ``matchlobby replay``.

Why a second process: comparing a million-match ladder's replayed history
with the stored one means turning the 2M stored rows into Python objects
(~1.8 s on the bench machine, plus ~0.7 s of SQL checking each row's event
and time against its match), on the same interpreter that is reading and
replaying the log (~6 s). The helper does that work on the other core, in
the same snapshot (:func:`writers_held`), and hands over one digest per
chunk of :data:`CHUNK` rows; the replay digests its own matches the same
way and reads stored rows itself only in a chunk whose digests differ, to
find the first row that does. The comparison is still ``==`` on the rows
(``server.replay``): a digest only says where to look.

Run as ``python -m server.history_digest DATABASE``. Commands on stdin and
answers on stdout are JSON lines: ``["snapshot"]`` begins the read
transaction (answer ``["ready"]``); ``["ladder", NAME, SCAN, ROWS]`` streams
``[rows, first id, digest or null]`` per chunk of ``ROWS`` rows, then
``["end"]``. A digest covers the rows two by two, as the replay's matches (:func:`_stored_pairs`);
it is null when two rows of a pair are not of one match, or a chunk has an
odd number of rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

CHUNK = 32768  # stored rows a digest covers: an even number, two rows a match
# What the helper digests: the rows as they are, event and time included; the replayed rows take
# both from their match, so a digest only agrees where the stored ones are their match's too.
STORED_DIGESTED = ("SELECT id, player_id, before, after, match_id, event_id, at FROM history "
                   "{scan} WHERE ladder = ? ORDER BY id")
SCANS = ("", "NOT INDEXED")
PRAGMAS = ("PRAGMA query_only = ON", "PRAGMA busy_timeout = 10000",
           "PRAGMA cache_size = -65536", "PRAGMA mmap_size = 1073741824")


def digest_pairs(pairs: list[tuple[Any, ...]]) -> bytes:
    """The digest of replayed ``HistoryPair`` values, or of stored rows as :func:`_stored_pairs`.

    ``marshal`` version 2 writes every value as it is, exact floats
    included, with no references between equal objects (version 3 would
    mark objects met twice, which depends on identity, not value): ~0.35 s
    for a million matches on the bench machine, all in C.
    """
    return hashlib.blake2b(marshal.dumps(pairs, 2), digest_size=16).digest()


def _stored_pairs(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]] | None:
    """Stored rows (id, player, before, after, match, event, at), two by two, as ``HistoryPair``.

    ``None`` when two rows of a pair are not of the same match, event and
    time, or there is an odd number of rows: no replayed match gives that.
    """
    if len(rows) % 2:
        return None
    pairs = []
    for k in range(0, len(rows), 2):
        _, first, before1, after1, mid, eid, at = rows[k]
        _, second, before2, after2, mid2, eid2, at2 = rows[k + 1]
        if mid2 != mid or eid2 != eid or at2 != at:
            return None
        pairs.append((first, before1, after1, second, before2, after2, mid, eid, at))
    return pairs


def _stored_chunks(conn: sqlite3.Connection, ladder: str, scan: str, size: int
                   ) -> Iterator[tuple[int, int, str | None]]:
    cur = conn.execute(STORED_DIGESTED.format(scan=scan), (ladder,))
    while rows := cur.fetchmany(size):
        pairs = _stored_pairs(rows)
        yield len(rows), rows[0][0], None if pairs is None else digest_pairs(pairs).hex()


def serve(database: str, commands: IO[str], answers: IO[str]) -> None:
    """The helper's side: answer ``commands`` until they end."""
    conn = sqlite3.connect(database, isolation_level=None)
    try:
        for pragma in PRAGMAS:
            conn.execute(pragma)
        for line in commands:
            command = json.loads(line)
            if command == ["snapshot"]:
                conn.execute("BEGIN")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot
                answers.write('["ready"]\n')
            elif command[0] == "ladder" and command[2] in SCANS and command[3] > 0:
                for chunk in _stored_chunks(conn, command[1], command[2], command[3]):
                    answers.write(json.dumps(chunk) + "\n")
                    answers.flush()
                answers.write('["end"]\n')
            else:
                raise ValueError(f"unknown command {command!r}")
            answers.flush()
    finally:
        conn.close()


@dataclass
class StoredChunk:
    """One chunk of a ladder's stored rows: a digest from the helper, or the rows read here."""

    rows: int
    first_id: int | None = None
    digest: bytes | None = None
    values: list[tuple[Any, ...]] | None = None


class DigestHelper:
    """The replay's end of the helper process (one snapshot, any number of ladders)."""

    def __init__(self, database: str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "server.history_digest", database],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
        self._pending = False  # a ladder's answers not yet read to their end

    def _send(self, command: list[Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()

    def _answer(self) -> Any:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the history digest helper stopped (exit {self._proc.wait()})")
        return json.loads(line)

    def snapshot(self) -> None:
        """Make the helper begin its read transaction; returns once it has."""
        self._send(["snapshot"])
        if self._answer() != ["ready"]:
            raise RuntimeError("the history digest helper did not take its snapshot")

    def ladder(self, name: str, scan: str, size: int = CHUNK) -> Iterator[StoredChunk]:
        """The digests of ``name``'s stored rows, ``size`` rows a chunk, as the helper makes them.

        Asked for at once, so the helper works while the caller replays; a
        ladder left unfinished is read to its end before the next one.
        """
        self._drain()
        self._send(["ladder", name, scan, size])
        self._pending = True
        return self._chunks()

    def _chunks(self) -> Iterator[StoredChunk]:
        while self._pending:
            answer = self._answer()
            if answer == ["end"]:
                self._pending = False
                return
            rows, first_id, value = answer
            yield StoredChunk(rows, first_id, None if value is None else bytes.fromhex(value))

    def _drain(self) -> None:
        while self._pending:
            self._pending = self._answer() != ["end"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


@contextlib.contextmanager
def writers_held(database: str) -> Iterator[None]:
    """Hold the database's write lock (no commits) for the ``with`` block.

    Two connections that begin reading inside it see the same snapshot:
    ``--check`` takes its own and the helper's so, for the few milliseconds
    that takes; a live server's writers wait (their busy timeout) meanwhile.
    """
    conn = sqlite3.connect(database, isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.stdin, sys.stdout)
