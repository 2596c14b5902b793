"""The event loop ``matchlobby serve`` runs on: uvloop's by default, asyncio's own with
``--loop asyncio``; each serves a rated match whose rating ``replay --check`` agrees with. Asked
for uvloop where it cannot be imported, serve refuses with one line and exit status 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from testkit.cli import cli_env, matchlobby_command, replay_check
from testkit.clients import play, registered
from testkit.logged_serve import LoggedServe, config_file, grep
from testkit.server_process import free_port

from server import eventloop


@pytest.mark.parametrize(("flags", "kind"), [((), eventloop.default_kind()),
                                             (("--loop", "asyncio"), "asyncio"),
                                             (("--loop", "uvloop"), "uvloop")])
async def test_serve_says_its_loop_and_rates_a_match_on_it(
        tmp_path: Path, flags: tuple[str, ...], kind: str) -> None:
    if kind == "uvloop" and eventloop.default_kind() != "uvloop":
        pytest.skip("uvloop is not installed")
    config = config_file(tmp_path / "lobby.toml")
    serve = LoggedServe(tmp_path, config, *flags)
    try:
        await serve.start()
        assert grep(serve.lines(), f"event loop: {kind}"), serve.stderr()
        ann, bob = await registered(serve.url, "ann", "bob")
        await play(ann, bob)
        row = (await bob.rating("ann")).in_ladder("backgammon")
        assert row is not None and row.rating > 1500 and row.games == 1, row
        await ann.close()
        await bob.close()
    finally:
        assert serve.stop() == 0, serve.stderr()
    status, said = await replay_check(Path(serve.db), config)
    assert status == 0, said


def test_asked_for_uvloop_where_it_is_not_installed_serve_refuses(tmp_path: Path) -> None:
    hidden = tmp_path / "no-uvloop"
    hidden.mkdir()
    (hidden / "uvloop.py").write_text("raise ImportError('hidden by the test')\n")
    env = cli_env()
    env["PYTHONPATH"] = f"{hidden}:{env.get('PYTHONPATH', '')}"
    done = subprocess.run(
        [*matchlobby_command(), "serve", "--loop", "uvloop", "--db", str(tmp_path / "lobby.db"),
         "--config", str(config_file(tmp_path / "lobby.toml")), "--port", str(free_port())],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.strip() == ("matchlobby serve: --loop uvloop: uvloop is not installed "
                                   "(hidden by the test)"), done.stderr
    assert "listening" not in done.stdout
