"""A helper process beside ``matchlobby replay``: a FIBS ladder's stored history, digested on the other core.

Why: comparing a million-match ladder's replayed history with the stored one
(``--check``, and a rewrite that keeps the rows that agree) means reading the
log (~2.3 s on the bench machine) and replaying it (~4 s), and turning the 2M
stored rows into Python objects (~1.8 s, plus ~0.7 s of SQL checking each
row's event and time against its match), all on one interpreter. The helper
reads the stored rows on the other core, in the same snapshot as the replay
(:func:`writers_held`), and hands over one digest per chunk of
:data:`CHUNK` rows; the replay digests its own matches the same way and
reads stored rows itself only in a chunk whose digests differ, to find the
first row that does. The comparison is still ``==`` on the rows
(``ratings_plugin.commands.replay``): a digest only says where to look. (Having the helper
read the log as well and hand its rows over was measured and is slower: the
helper then has more to do than the replay, 7.4 s against ~5 s.) From the
first difference on, where nothing stored is read any more, a new helper
process reads the log after it and hands its rows over (``rows``): for a
rewrite of all 2M rows of the bench's ladder, 16.9–21.3 s against
19.0–22.7 s reading it here (four runs each, alternating).

Run as ``python -P replay_helper.py DATABASE``: the file alone, which needs only the standard
library (its package's imports would more than double the start). Commands come on stdin as
JSON lines; answers go to stdout as frames (a 4-byte length, then a
``marshal``-ed tuple). ``["snapshot"]`` begins the read transaction
(answer ``("ready",)``). ``["ladder", NAME, SCAN, ROWS]`` streams
``(rows, first id, digest or None)`` for each chunk of ``ROWS`` stored rows,
then ``("end",)``. A digest covers the rows two by two, as the replay's
matches (:func:`_stored_pairs`); it is ``None`` when two rows of a pair are
not of one match, or a chunk has an odd number of rows. ``["rows", SQL,
PARAMETERS, ROWS]`` streams the rows of a query, ``(rows,)`` for each
``ROWS`` of them, then ``("end",)`` (the connection is read only).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import sqlite3
import struct
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
FRAME = struct.Struct("<I")


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


def _ladder(conn: sqlite3.Connection, ladder: str, scan: str, size: int
            ) -> Iterator[tuple[Any, ...]]:
    """The answers to one ``ladder`` command."""
    cur = conn.execute(STORED_DIGESTED.format(scan=scan), (ladder,))
    while rows := cur.fetchmany(size):
        pairs = _stored_pairs(rows)
        yield len(rows), rows[0][0], None if pairs is None else digest_pairs(pairs)
    yield ("end",)


def serve(database: str, commands: IO[str], answers: IO[bytes]) -> None:
    """The helper's side: answer ``commands`` until they end."""
    def send(answer: tuple[Any, ...]) -> None:
        data = marshal.dumps(answer, 2)
        answers.write(FRAME.pack(len(data)))
        answers.write(data)

    conn = sqlite3.connect(database, isolation_level=None)
    try:
        for pragma in PRAGMAS:
            conn.execute(pragma)
        for line in commands:
            command = json.loads(line)
            if command == ["snapshot"]:
                conn.execute("BEGIN")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot
                send(("ready",))
            elif command[0] == "ladder" and command[2] in SCANS and command[3] > 0:
                for answer in _ladder(conn, command[1], command[2], command[3]):
                    send(answer)
                    answers.flush()
            elif command[0] == "rows" and command[3] > 0:
                cur = conn.execute(command[1], command[2])
                while rows := cur.fetchmany(command[3]):
                    send((rows,))
                send(("end",))
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


class ReplayHelper:
    """The replay's end of the helper process (one snapshot, any number of ladders)."""

    def __init__(self, database: str) -> None:
        self.database = database
        self._proc = self._start()
        self.pending = False  # a command's answers not yet read to their end
        self.alive = True  # False once a restart failed: the caller reads for itself

    def _start(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-P", __file__, self.database],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def restart(self) -> bool:
        """A new helper process in a new snapshot, for when the answers still coming are not
        wanted (it cannot be stopped in the middle of a command); whether it has its snapshot.

        The new snapshot is the old one only while no commit came between:
        the rewrite holds the write lock and has committed nothing.
        """
        self.close()
        self.pending = False
        try:
            self._proc = self._start()
        except OSError:
            self.alive = False
        else:
            self.alive = self.snapshot()
        return self.alive

    def _send(self, command: list[Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command).encode() + b"\n")
        self._proc.stdin.flush()

    def answer(self) -> Any:
        """The helper's next answer."""
        assert self._proc.stdout is not None
        head = self._proc.stdout.read(FRAME.size)
        data = self._proc.stdout.read(FRAME.unpack(head)[0]) if len(head) == FRAME.size else b""
        if not data:
            raise RuntimeError(f"the replay helper stopped (exit {self._proc.wait()})")
        return marshal.loads(data)

    def snapshot(self) -> bool:
        """Make the helper begin its read transaction; whether it has.

        False when the helper could not start or open the database: the
        replay then reads the stored rows itself, as for a small history.
        """
        try:
            self._send(["snapshot"])
            return bool(self.answer() == ("ready",))
        except (OSError, RuntimeError, ValueError, EOFError):
            return False

    def ladder(self, name: str, scan: str, size: int = CHUNK) -> Iterator[StoredChunk]:
        """The digests of ``name``'s stored rows, ``size`` rows a chunk, as the helper makes them.

        Asked for at once, so the helper works while the caller replays; a
        ladder left unfinished is read to its end before the next one.
        """
        self._ask(["ladder", name, scan, size])
        return (StoredChunk(*answer) for answer in self._answers())

    def rows(self, query: str, params: Sequence[Any], size: int = 4096
             ) -> Iterator[tuple[Any, ...]]:
        """The rows of ``query`` (read only), read by the helper ``size`` at a time."""
        self._ask(["rows", query, list(params), size])
        for answer in self._answers():
            yield from answer[0]

    def _ask(self, command: list[Any]) -> None:
        """Send ``command`` once the last one's answers are read to their end."""
        while self.pending:
            self.pending = self.answer() != ("end",)
        self._send(command)
        self.pending = True

    def _answers(self) -> Iterator[Any]:
        """The answers to the last command, up to its ``("end",)``."""
        while self.pending:
            answer = self.answer()
            if answer == ("end",):
                self.pending = False
                return
            yield answer

    def close(self) -> None:
        """Stop the helper; what it has not sent yet is not wanted."""
        if self.pending:
            self._proc.kill()
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
    serve(sys.argv[1], sys.stdin, sys.stdout.buffer)
