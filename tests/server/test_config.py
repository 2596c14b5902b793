"""The configuration file: the documented example is the defaults, and bad files are refused."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from testkit.cli import run_cli

from server.config import Config, ConfigError, load_config

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "matchlobby.example.toml"


def test_the_documented_example_is_exactly_the_defaults() -> None:
    assert load_config(EXAMPLE) == Config()


def test_no_file_gives_the_four_default_ladders() -> None:
    config = load_config(None)
    assert [(x.name, x.system.name, x.format) for x in config.ladders] == [
        ("backgammon", "fibs", "singles"), ("scrabble", "cas", "singles"),
        ("foosball-singles", "p4p", "singles"), ("foosball-doubles", "p4p", "doubles")]
    assert (config.host, config.port, config.database, config.drop_timeout) == (
        "127.0.0.1", 8765, "matchlobby.db", 600.0)


@pytest.mark.parametrize("text, problem", [
    ("[server]\nprot = 1\n", "unknown key"),
    ("[limits]\nburst = -1\n", "burst"),
    ("[limits]\nidle_timeout = 'abc'\n", "idle_timeout: expected a number that is not negative, "
                                          "not 'abc'"),
    ("[limits]\nburst = 2.5\n", "burst: expected a whole number that is not negative, not 2.5"),
    ("[limits]\norigins = 'x'\n", "origins"),
    ("[[ladders]]\nname = 'x'\nsystem = 'chess'\n", "unknown rating system"),
    ("[[ladders]]\nname = 'x'\nsystem = 'fibs'\nkk = 1\n",
     "(x): unknown key 'kk' for a ladder of system 'fibs'; its keys: "),
    ("[[ladders]]\nname = 'x'\nsystem = 'fibs'\nkk = 1\nll = 2\n",
     "unknown keys 'kk', 'll' for a ladder of system 'fibs'; its keys: "),
    ("[[ladders]]\nname = 'x'\nsystem = 'fibs'\nformat = 'doubles'\n", "doubles"),
    ("[tls]\ncertificate = 'c.pem'\n", "[tls]"),
    ("[server\n", "Expected"),
    ("[server]\nnode = 'two words'\n", "node must be"),
    ("[server]\nnode = ''\n", "node must be"),
    ("[server]\nnode = 3\n", "node must be"),
    ("[server]\nseek_range = -1\n", "seek_range must be at least 0"),
    ("[server]\nseek_widen_seconds = 'soon'\n", "seek_widen_seconds must be a number"),
    ("[[ladders]]\nname = 'Cup'\nsystem = 'fibs'\n[[ladders]]\nname = 'cup'\nsystem = 'p4p'\n",
     "ladder names must be unique (ignoring case"),
])
def test_bad_files_are_refused_with_the_reason(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and problem in str(info.value)


def test_a_file_not_in_utf8_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('[server]\nname = "Café"\n'.encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (f"{path}: line 2 is not UTF-8 text (byte 0xe9); "
                               "TOML files are UTF-8")
    done = run_cli(["serve", "--config", str(path)], cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"matchlobby: {info.value}\n")


def test_a_node_is_named_by_its_setting_or_its_host_and_pid(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text("[server]\nnode = 'lobby-1.eu:a'\n", encoding="utf-8")
    assert load_config(path).node_name == "lobby-1.eu:a"
    assert Config().node_name == f"{socket.gethostname()}-{os.getpid()}"


def test_automatch_is_set_in_the_server_section(tmp_path: Path) -> None:
    path = tmp_path / "seek.toml"
    path.write_text("[server]\nseek_range = 40\nseek_widen_points = 25\nseek_widen_seconds = 0\n",
                    encoding="utf-8")
    config = load_config(path)
    assert (config.seek_range, config.seek_widen_points, config.seek_widen_seconds) == (
        40, 25.0, 0.0)
