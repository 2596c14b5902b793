"""``matchlobby backup`` and ``restore`` of a PostgreSQL database, through PostgreSQL's own
``pg_dump`` and ``pg_restore``.

``pg_dump`` reads one snapshot without blocking the nodes' writes, into its custom format
(``-Fc``: compressed, checked by ``pg_restore --list``, restorable table by table). The
programs are the installed ones (on ``PATH``, else the newest of
``/usr/lib/postgresql/*/bin``); the database's URL is given to them without its password,
which goes in ``PGPASSWORD``, so it shows neither in ``ps`` nor in a message.

A restore holds the "restoring" advisory lock (:mod:`server.store.serve_lock`) alone from
before it looks at the target until it is done, so no node starts meanwhile. It refuses while
the lobby runs on the target: a ``serve`` shares that lock, holds its node's advisory lock and
beats in ``nodes`` (:mod:`server.store.pg.nodes`); any other client connected to it is named
too, since ``pg_restore --clean`` would drop the tables under it.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.refused import Refused
from server.store.backends import shown, without_password
from server.store.backup import MOVE, kind_of
from server.store.pg.nodes import DEAD_AFTER
from server.store.serve_lock import RESTORE_LOCK, SERVE_LOCK

INSTALL = ("{program} is not installed: install PostgreSQL's client programs (Debian and "
           "Ubuntu: apt-get install postgresql-client), of the server's version or newer, or "
           "put {program} on PATH")
_VERSION = re.compile(r"/usr/lib/postgresql/(\d+)/bin/")
_COPY_VERSION = re.compile(r"^COPY \S*schema_version \(version\) FROM stdin;\n(\d+)\n", re.M)


def program(name: str) -> str:
    """The path of PostgreSQL's program ``name`` (``pg_dump``, ``pg_restore``)."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                      key=lambda p: int(m.group(1)) if (m := _VERSION.match(p)) else 0)
    if versions:
        return versions[-1]
    raise Refused(INSTALL.format(program=name))


@dataclass(frozen=True)
class Target:
    """A database URL as the programs take it: without the password, which goes in the
    environment."""

    url: str
    env: dict[str, str]

    @classmethod
    def of(cls, url: str) -> Target:
        bare, password = without_password(url)
        env = dict(os.environ)
        if password is not None:
            env["PGPASSWORD"] = password
        return cls(bare, env)


def _run(args: list[str], target: Target) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=target.env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)


def _failed(what: str, done: subprocess.CompletedProcess[str], url: str) -> Refused:
    said = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
    return Refused(f"{shown(url)}: {what} failed: {said}")


def dump(url: str, partial: Path) -> None:
    """``pg_dump -Fc`` of ``url`` into ``partial``."""
    target = Target.of(url)
    done = _run([program("pg_dump"), "--format=custom", f"--file={partial}",
                 f"--dbname={target.url}"], target)
    if done.returncode != 0:
        raise _failed("pg_dump", done, url)


def backup_version(backup: Path) -> int:
    """Refuse a file that is not a whole ``pg_dump -Fc`` of a matchlobby database; its schema
    version."""
    if not backup.is_file():
        raise Refused(f"{backup}: no such backup file")
    if kind_of(backup) == "sqlite":
        raise Refused(f"{backup}: an SQLite backup; restore it into an SQLite file (--db "
                      f"FILE), then {MOVE}")
    target = Target.of("")
    listed = _run([program("pg_restore"), "--list", str(backup)], target)
    if listed.returncode != 0:
        said = " ".join(listed.stderr.split())
        raise Refused(f"{backup}: not a PostgreSQL backup that pg_restore can read ({said}; "
                      "nothing was restored)")
    if not re.search(r"TABLE DATA \S+ players ", listed.stdout):
        raise Refused(f"{backup}: a PostgreSQL backup, but not of a matchlobby database (it "
                      "has no players table)")
    data = _run([program("pg_restore"), "--data-only", "--table=schema_version", "--file=-",
                 str(backup)], target)
    found = _COPY_VERSION.search(data.stdout)
    if data.returncode != 0 or found is None:
        raise Refused(f"{backup}: a PostgreSQL backup without the lobby's schema version")
    return int(found.group(1))


def restore(backup: Path, url: str) -> None:
    """``pg_restore`` of ``backup`` into ``url``: the backup's tables dropped and made again,
    in one transaction (a failure leaves the target as it was)."""
    target = Target.of(url)
    done = _run([program("pg_restore"), "--clean", "--if-exists", "--single-transaction",
                 "--no-owner", "--no-privileges", f"--dbname={target.url}", str(backup)],
                target)
    if done.returncode != 0:
        raise _failed("pg_restore", done, url)


async def claim(c: Any) -> list[str]:
    """Take the "restoring" lock on ``c``'s session (let go when ``c`` closes), then say who
    uses the database, each a sentence; empty: nobody, and the lock is held."""
    if await c.fetchval("SELECT pg_try_advisory_lock($1, 0)", RESTORE_LOCK):
        return await in_use(c)
    restoring = await c.fetchval(
        "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND mode = 'ExclusiveLock' AND classid = $1::bigint::oid AND objid = 0 "
        "AND objsubid = 2 AND database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())", RESTORE_LOCK)
    if restoring:
        return ["another matchlobby restore is running on it"]
    return await in_use(c) or ["matchlobby serve is running on it"]  # nodes share the lock


async def in_use(c: Any) -> list[str]:
    """Who uses the database ``conn`` is connected to, each a sentence: running nodes, other
    clients."""
    said: list[str] = []
    locks = await c.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND classid = $1::bigint::oid AND objsubid = 2 AND database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())", SERVE_LOCK)
    beating: list[str] = []
    if await c.fetchval("SELECT to_regclass('nodes') IS NOT NULL"):
        beating = [f"{r['name']} (pid {r['pid']} on {r['host']})" for r in await c.fetch(
            "SELECT name, host, pid FROM nodes WHERE beat > "
            "extract(epoch from clock_timestamp()) - $1 ORDER BY name", DEAD_AFTER)]
    if beating:
        said.append(f"matchlobby serve is running on it: node {', '.join(beating)}")
    elif locks:
        said.append(f"matchlobby serve is running on it ({locks} node(s))")
    others = await c.fetch(
        "SELECT coalesce(nullif(application_name, ''), 'a client') AS who, count(*) AS n "
        "FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
        "GROUP BY 1 ORDER BY 1")
    if others and not said:
        said.append("other clients are connected to it: " + ", ".join(
            f"{r['who']} ({r['n']})" for r in others))
    return said


async def players_in(c: Any) -> int | None:
    """The target's players (0: no lobby, or one without players); ``None``: it holds tables
    of something else."""
    if await c.fetchval("SELECT to_regclass('players') IS NOT NULL"):
        return int(await c.fetchval("SELECT count(*) FROM players"))
    tables = await c.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = "
                              "current_schema()")
    return 0 if not tables else None


async def forget_nodes(c: Any) -> None:
    """Who was online on which node when the backup was made is not the restored lobby's."""
    async with c.transaction():
        for table in ("online", "nodes"):
            if await c.fetchval(f"SELECT to_regclass('{table}') IS NOT NULL"):
                await c.execute(f"DELETE FROM {table}")
