"""One ``matchlobby serve`` a SQLite file, one a node name on a PostgreSQL database: a
second one refuses to start with one clear line and exit status 2, while the first goes on
serving; once the first has stopped, or been killed, it can be served again. Under another
name (the default: the host and the pid), a second serve on PostgreSQL is another node of
the same lobby."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
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
        db_path: Path, fast_config: Path, tmp_path: Path, backend: str) -> None:
    if backend == "postgresql":  # one name for both: the second would be the same node
        named = tmp_path / "named.toml"
        named.write_text('[server]\nnode = "main"\n\n' + fast_config.read_text())
        fast_config = named
    first = ServerProcess(db_path, fast_config, log=tmp_path / "first.log").start()
    try:
        await first.ready()
        refused = await asyncio.to_thread(second_serve, db_path, fast_config)
        assert refused.returncode == 2, (refused.stdout, refused.stderr)
        assert refused.stdout == "", refused.stdout  # it never listened
        lines = refused.stderr.splitlines()
        assert len(lines) == 1, refused.stderr  # one line, no traceback
        assert lines[0].startswith("matchlobby serve: "), lines
        assert ("another matchlobby serve named 'main' is running on this database"
                if backend == "postgresql" else
                "another matchlobby serve is running on this database") in lines[0], lines
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


async def test_two_serves_on_one_postgresql_database_are_one_lobby(
        db_path: Path, fast_config: Path, tmp_path: Path, backend: str) -> None:
    """Each under its own default name: both serve; a player registered on one is found
    (within the accounts' poll, a quarter of a second), and shown online, on the other (the
    second used to answer "No player named ..." for good)."""
    if backend != "postgresql":
        pytest.skip("several nodes share a PostgreSQL database; SQLite has one process")
    one = ServerProcess(db_path, fast_config, log=tmp_path / "one.log").start()
    two = ServerProcess(db_path, fast_config, log=tmp_path / "two.log").start()
    try:
        await one.ready()
        await two.ready()
        bob = LobbyClient(one.url, reconnect=False)
        await bob.connect()
        await bob.register("bob", "bob-password")
        watcher = LobbyClient(two.url, reconnect=False)
        await watcher.connect()
        try:
            async def online() -> dict[str, Any]:
                while True:
                    reply = await watcher.request("whois", {"name": "bob"})
                    if reply["ok"] and reply["data"]["online"]:
                        return dict(reply["data"])
                    await asyncio.sleep(0.1)

            seen = await asyncio.wait_for(online(), 20)
            assert (seen["player"], seen["status"]) == ("bob", "ready")
        finally:
            await bob.close()
            await watcher.close()
    finally:
        one.stop()
        two.stop()


async def test_a_serve_refuses_to_start_on_postgresql_while_a_restore_runs_there(
        db_path: Path, fast_config: Path, tmp_path: Path, backend: str) -> None:
    """A node that starts while ``matchlobby restore`` runs (a restart after a failure, say)
    would serve the old lobby over the restored one: it refuses with one line, and starts
    once the restore lets go of its lock."""
    if backend != "postgresql":
        pytest.skip("on SQLite a restore holds the serve lock itself")
    import asyncpg

    from server.store.serve_lock import RESTORE_LOCK

    holder = await asyncpg.connect(str(db_path))  # as a restore does
    try:
        await holder.execute("SELECT pg_advisory_lock($1, 0)", RESTORE_LOCK)
        refused = await asyncio.to_thread(second_serve, db_path, fast_config)
        assert refused.returncode == 2 and refused.stdout == "", refused
        lines = refused.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("matchlobby serve: "), refused.stderr
        assert "a matchlobby restore is running on this database" in lines[0], lines
    finally:
        await holder.close()
    server = ServerProcess(db_path, fast_config, log=tmp_path / "after.log").start()
    try:
        await server.ready()
        assert await whois_admin(server.url)
    finally:
        server.stop()
