"""One ``matchlobby serve`` a database: a second one on the same SQLite file or PostgreSQL
database refuses to start with one clear line and exit status 2, while the first goes on
serving; once the first has stopped, or been killed, the database can be served again."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from testkit.children import die_with_parent
from testkit.cli import cli_env, matchlobby_command
from testkit.constants import ADMIN
from testkit.server_process import ServerProcess, free_port

from clients import LobbyClient


def second_serve(db: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*matchlobby_command(), "serve", "--db", str(db), "--config", str(config),
         "--port", str(free_port())],
        cwd=db.parent, env=cli_env(), capture_output=True, text=True, timeout=60,
        preexec_fn=die_with_parent())


async def whois_admin(url: str) -> bool:
    client = LobbyClient(url, reconnect=False)
    await client.connect()
    try:
        return (await client.whois(ADMIN)).role == "admin"
    finally:
        await client.close()


async def test_a_second_serve_on_the_same_database_refuses_and_the_first_serves_on(
        db_path: Path, fast_config: Path, tmp_path: Path) -> None:
    first = ServerProcess(db_path, fast_config, log=tmp_path / "first.log").start()
    try:
        await first.ready()
        refused = await asyncio.to_thread(second_serve, db_path, fast_config)
        assert refused.returncode == 2, (refused.stdout, refused.stderr)
        assert refused.stdout == "", refused.stdout  # it never listened
        lines = refused.stderr.splitlines()
        assert len(lines) == 1, refused.stderr  # one line, no traceback
        assert lines[0].startswith("matchlobby serve: "), lines
        assert "another matchlobby serve is running on this database" in lines[0], lines
        assert await whois_admin(first.url)  # the first is untouched
    finally:
        first.stop()

    # stopped: the database is free again
    again = ServerProcess(db_path, fast_config, log=tmp_path / "again.log").start()
    try:
        await again.ready()
        assert await whois_admin(again.url)
        # killed: the kernel (or PostgreSQL, for the lock's connection) lets go of it too
        again.kill()
    finally:
        again.stop()
    third = ServerProcess(db_path, fast_config, log=tmp_path / "third.log").start()
    try:
        await third.ready()
        assert await whois_admin(third.url)
    finally:
        third.stop()
