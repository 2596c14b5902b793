"""``matchlobby evaluate --chart``, run as a real process: a PNG or an SVG of the calibration
chart and the log-loss by system; without matplotlib, one line saying how to install it."""

from __future__ import annotations

import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from testkit.cli import cli_env, run_cli
from testkit.club import club
from testkit.constants import CLI_TIMEOUT

from ratings_plugin.evaluation_chart import DPI, HEIGHT, INSTALL, WIDTH

SVG = "{http://www.w3.org/2000/svg}"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG signature"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_run_draws_a_png_and_an_svg(tmp_path: Path) -> None:
    results = club(tmp_path / "club.csv")
    plain = run_cli(["evaluate", "--file", str(results), "--system", "fibs",
                     "--system", "glicko2"], tmp_path)
    assert plain.returncode == 0, plain.stderr

    done = run_cli(["evaluate", "--file", str(results), "--system", "fibs", "--system",
                    "glicko2", "--chart", "chart.png"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain.stdout  # the table as without --chart
    assert done.stderr == "Chart written to chart.png\n"
    assert png_size((tmp_path / "chart.png").read_bytes()) == (round(WIDTH * DPI), round(HEIGHT * DPI))

    done = run_cli(["evaluate", "--file", str(results), "--system", "fibs", "--system", "fibs",
                    "--option", "experience_includes_match=false", "--system", "glicko2", "--chart",
                    str(tmp_path / "chart.svg"), "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"Chart written to {tmp_path / 'chart.svg'}\n"
    root = ET.parse(tmp_path / "chart.svg").getroot()
    assert root.tag == f"{SVG}svg"
    assert (root.get("width"), root.get("height")) == (f"{WIDTH * 72:g}pt", f"{HEIGHT * 72:g}pt")
    words = {"".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")}
    assert {"fibs", "fibs (experience_includes_match=false)", "glicko2", "baseline", "win_rate",
            "perfectly calibrated"} <= words, words
    assert "Log-loss by system (240 games)" in words


def test_a_chart_it_cannot_draw_is_one_line_and_exit_2(tmp_path: Path) -> None:
    results = club(tmp_path / "club.csv", games=20)
    for chart, problem in [("chart.pdf", "the file must end in .png or .svg"),
                           ("nowhere/chart.png", "no folder nowhere")]:
        done = run_cli(["evaluate", "--file", str(results), "--chart", chart], tmp_path)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"matchlobby evaluate: --chart {chart}: {problem}\n"


def test_without_matplotlib_chart_says_how_to_install_it(tmp_path: Path) -> None:
    """A Python where ``import matplotlib`` fails (a ``None`` in ``sys.modules`` makes every
    import of it raise ImportError), running the real command line."""
    results = club(tmp_path / "club.csv", games=20)
    script = ("import sys; sys.modules['matplotlib'] = None; from server.cli import main; "
              "sys.exit(main(sys.argv[1:]))")
    run = [sys.executable, "-c", script, "evaluate", "--file", str(results)]
    done = subprocess.run([*run, "--chart", "chart.png"], cwd=tmp_path, env=cli_env(),
                          capture_output=True, encoding="utf-8", timeout=CLI_TIMEOUT,
                          check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("matchlobby evaluate: --chart needs matplotlib, which is not "
                           f"installed: {INSTALL}\n")
    assert not (tmp_path / "chart.png").exists()
    # the same Python without --chart evaluates: nothing else needs matplotlib
    plain = subprocess.run(run, cwd=tmp_path, env=cli_env(), capture_output=True,
                           encoding="utf-8", timeout=CLI_TIMEOUT, check=False)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("system")
