"""Which lines the terminal client's history leaves out (clients/history.py): every form of a
command that carries a password or a session token, and nothing else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clients.history import PrivateHistory, holds_secret

SECRET = ["login carol carol-pass-1", "LOGIN carol x", "  register dan pw-secret-2",
          "resume 0123abcd", '"login" carol pw', "password old new",
          '{"cmd": "login", "args": {"name": "carol", "password": "pw"}}',
          '{"id": 3, "cmd": "RESUME", "args": {"token": "0123abcd"}}',
          '{"cmd": "register", "args": {"name": "c", "password": "p"}',  # not even valid JSON
          '[{"cmd": "login"}]']
PLAIN = ["who", "whois carol", "help login", "invite login backgammon", "history carol",
         "logout", '{"cmd": "whois", "args": {"name": "carol"}}', "", "event create Resume"]


@pytest.mark.parametrize("line", SECRET)
def test_lines_with_a_secret_are_left_out(line: str) -> None:
    assert holds_secret(line)


@pytest.mark.parametrize("line", PLAIN)
def test_other_lines_are_kept(line: str) -> None:
    assert not holds_secret(line)


def test_a_file_removed_meanwhile_is_made_again_for_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "history"
    old = os.umask(0o022)
    try:
        history = PrivateHistory(path)
        path.unlink()
        history.append_string("who")
        history.append_string("login carol carol-pass-1")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600
    assert [x for x in path.read_text().splitlines() if x.startswith("+")] == ["+who"]
    assert list(PrivateHistory(path).load_history_strings()) == ["who"]
