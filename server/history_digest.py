"""The stored history of FIBS ladders, read and digested by a helper process beside ``matchlobby replay``.

Why a second process: comparing a million-match ladder's replayed history
with the stored one means turning the 2M stored rows into Python objects
(~1.8 s on the bench machine, plus ~0.7 s of SQL checking each row's event
and time against its match), on the same interpreter that is reading and
replaying the log (~6 s). The helper does that work on the other core, in
the same snapshot (:func:`writers_held`), and hands over one digest per
chunk of :data:`CHUNK` rows; the replay digests its own rows the same way
and reads stored rows itself only in a chunk whose digests differ, to find
the first row that does. The comparison is still ``==`` on the rows
(``server.replay``): a digest only says where to look.

Run as ``python -m server.history_digest DATABASE``. Commands on stdin and
answers on stdout are JSON lines: ``["snapshot"]`` begins the read
transaction (answer ``["ready"]``); ``["ladder", NAME, SCAN, ROWS]`` streams
``[rows, first id, digest or null]`` per chunk of ``ROWS`` rows, then
``["end"]``. A null
digest means the chunk holds a row whose event or time is not its match's
(:data:`STORED_FIBS_ROWS`), or a value that is not of the stored kind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from typing import IO, Any

CHUNK = 32768  # stored rows a digest covers: an even number, two rows a match
# A ladder's stored FIBS history in id order, as compared: player, before, after, match, and
# whether the row's event or time differs from its match's (the replayed rows take both from
# the match). {id} is "h.id, " for the helper (it reports where each chunk begins) or "";
# {scan} is "" or "NOT INDEXED" (server.replay._history_scan).
STORED_FIBS_ROWS = """SELECT {id}h.player_id, h.before, h.after, h.match_id,
    (h.event_id IS NOT m.event_id OR h.at IS NOT m.finished_at)
    FROM history h {scan} LEFT JOIN matches m ON m.id = h.match_id
    WHERE h.ladder = ? ORDER BY h.id"""
SCANS = ("", "NOT INDEXED")
PRAGMAS = ("PRAGMA query_only = ON", "PRAGMA busy_timeout = 10000",
           "PRAGMA cache_size = -65536", "PRAGMA mmap_size = 1073741824")


@cache
def _packer(rows: int) -> struct.Struct:
    return struct.Struct("<" + "qddq" * rows)


def digest(values: Iterator[Any] | Sequence[Any], rows: int) -> bytes:
    """The digest of ``rows`` rows given as their (player, before, after, match) values in a row.

    Raises ``struct.error`` for a value of another kind (a missing match, a
    text rating): no replayed row holds one.
    """
    return hashlib.blake2b(_packer(rows).pack(*values), digest_size=16).digest()


def digest_pairs(pairs: Sequence[Sequence[Any]]) -> bytes:
    """:func:`digest` of the two rows of each ``HistoryPair`` (server.replay writes them so)."""
    return digest(chain.from_iterable((first, before1, after1, mid, second, before2, after2, mid)
                                      for first, before1, after1, second, before2, after2, mid, *_
                                      in pairs), 2 * len(pairs))


def _stored_chunks(conn: sqlite3.Connection, ladder: str, scan: str, size: int
                   ) -> Iterator[tuple[int, int, str | None]]:
    cur = conn.execute(STORED_FIBS_ROWS.format(id="h.id, ", scan=scan), (ladder,))
    while rows := cur.fetchmany(size):
        value: str | None = None
        if not any(row[5] for row in rows):
            with contextlib.suppress(struct.error):
                value = digest(chain.from_iterable(row[1:5] for row in rows), len(rows)).hex()
        yield len(rows), rows[0][0], value


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
