"""A power cut, simulated: what a database and its WAL hold after one, from a record of
every write and fsync a process made to them (the LD_PRELOAD shim ``syncrecord.c``).

A power cut keeps what a file had at its last completed fsync (or fdatasync) and may lose
anything written to it after that; the ``-shm`` file lives in memory and is lost whole
(SQLite rebuilds it from the WAL). :func:`rebuild` replays the record up to a cut point
under one of two models:

- ``synced``: every write after its file's last sync is lost;
- ``torn``: each of those writes is kept or lost at random, and a kept one may be torn
  after any 512-byte sector (a prefix of it reaches the disk), which is what SQLite
  assumes a disk may do (https://www.sqlite.org/atomiccommit.html, "Hardware
  Assumptions").

A cut point is a byte offset in the record: the moment the record had that length. A
reply received when the record had length ``n`` had its commit's sync recorded before
``n`` (the shim writes a record after its call returns, and the server answers after
its commit returns), so a cut at ``n`` or later must keep it.
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testkit.constants import ROOT

HEADER = struct.Struct("<cBxxIQ")
FILES = ("", "-wal", "-journal")  # the shim's file numbers: database, WAL, rollback journal
SECTOR = 512
SOURCE = ROOT / "tests" / "reliability" / "syncrecord.c"


def build_shim(folder: Path) -> Path | None:
    """``syncrecord.so`` compiled from :data:`SOURCE` into ``folder``; None without a compiler."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    out = folder / "syncrecord.so"
    done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(out),
                           str(SOURCE), "-ldl", "-lpthread"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, f"cannot build the shim:\n{done.stderr}"
    return out


def shim_env(shim: Path, db: Path, log: Path) -> dict[str, str]:
    """What a process needs in its environment to run under the shim, recording ``db``."""
    return {"LD_PRELOAD": str(shim), "SYNCRECORD_DB": str(db), "SYNCRECORD_LOG": str(log)}


@dataclass(frozen=True)
class Op:
    end: int  # the record's length once this operation was in it
    op: str  # W write, S sync, T truncate, O open, U unlink
    file: int  # index into FILES
    offset: int
    data: bytes = b""


def read_record(log: Path) -> list[Op]:
    raw = log.read_bytes()
    ops: list[Op] = []
    at = 0
    while at + HEADER.size <= len(raw):
        op, file, length, offset = HEADER.unpack_from(raw, at)
        end = at + HEADER.size + length
        if end > len(raw):
            break  # cut off mid-record (the writer was killed): it never completed
        ops.append(Op(end, op.decode(), file, offset, raw[at + HEADER.size:end]))
        at = end
    return ops


class Watch:
    """Counts a record's syncs as it grows (reads only the headers of what is new)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.at = 0
        self.syncs = [0] * len(FILES)

    def update(self) -> list[int]:
        """Syncs recorded so far, per file."""
        try:
            size = self.log.stat().st_size
        except FileNotFoundError:
            return self.syncs
        with open(self.log, "rb") as f:
            while self.at + HEADER.size <= size:
                f.seek(self.at)
                op, file, length, _ = HEADER.unpack(f.read(HEADER.size))
                if self.at + HEADER.size + length > size:
                    break
                if op == b"S":
                    self.syncs[file] += 1
                self.at += HEADER.size + length
        return self.syncs


def _apply(image: bytearray, op: Op, torn_at: int | None = None) -> None:
    if op.op == "W":
        data = op.data if torn_at is None else op.data[:torn_at]
        end = op.offset + len(data)
        if len(image) < end:
            image.extend(bytes(end - len(image)))
        image[op.offset:end] = data
    elif op.op == "T":
        del image[op.offset:]
        if len(image) < op.offset:
            image.extend(bytes(op.offset - len(image)))


def rebuild(ops: list[Op], initial: dict[int, bytes], cut: int, model: str,
            rng: random.Random | None = None) -> dict[int, bytes]:
    """Each file's content after a power cut when the record had ``cut`` bytes.

    ``initial``: the files' content before the recorded process started (taken as durable).
    ``model``: ``synced`` or ``torn`` (which needs ``rng``); see the module's docstring.
    """
    durable = {f: bytearray(initial.get(f, b"")) for f in range(len(FILES))}
    pending: dict[int, list[Op]] = {f: [] for f in range(len(FILES))}
    for op in ops:
        if op.end > cut:
            break
        if op.op in "WT":
            pending[op.file].append(op)
        elif op.op == "S":
            for earlier in pending[op.file]:
                _apply(durable[op.file], earlier)
            pending[op.file].clear()
        elif op.op == "U":  # removed: nothing of it comes back
            durable[op.file] = bytearray()
            pending[op.file].clear()
    if model == "torn":
        assert rng is not None
        for f, ops_left in pending.items():
            for op in ops_left:
                if rng.random() < 0.5:
                    continue
                torn = None
                if op.op == "W" and len(op.data) > SECTOR and rng.random() < 0.3:
                    torn = SECTOR * rng.randrange(1, (len(op.data) + SECTOR - 1) // SECTOR)
                _apply(durable[f], op, torn)
    else:
        assert model == "synced", model
    return {f: bytes(image) for f, image in durable.items()}


def write_files(files: dict[int, bytes], db: Path) -> None:
    """The rebuilt files as ``db`` and its WAL (no ``-shm``: it did not survive)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    for f, content in files.items():
        path = Path(f"{db}{FILES[f]}")
        if content or f == 0:
            path.write_bytes(content)


def syncs(ops: list[Op], file: int) -> list[Op]:
    return [op for op in ops if op.op == "S" and op.file == file]


def before(op: Op, ops: list[Op]) -> int:
    """The cut point just before ``op`` was recorded (right after the operation before it)."""
    index = ops.index(op)
    return ops[index - 1].end if index else 0
