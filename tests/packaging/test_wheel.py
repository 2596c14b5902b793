"""The package as an operator installs it, and the container image's commands.

- **Wheel.** ``python -m build`` makes the sdist and, from it, the wheel, out of the files the
  Dockerfile's build stage copies (nothing else of the checkout). The wheel goes into a fresh
  virtual environment with the PostgreSQL extra, as the image installs it (its dependencies
  from the package index, through pip's cache; the repository is on no path), and its
  ``matchlobby serve``, run from a folder outside the repository on a new SQLite file, serves
  the page and every file it loads and registers and logs in a player over the WebSocket.
- **Image.** No image can be built here (no base image can be pulled, no container engine
  runs), so the Dockerfile's ``ENV``, ``ENTRYPOINT``, ``CMD`` and ``HEALTHCHECK`` run against
  that environment with the image's files in place (testkit/dockerfile.py): the server serves,
  and the health check passes while it runs and fails once it has stopped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from testkit.children import die_with_parent
from testkit.constants import FAST_CONFIG, ROOT
from testkit.dockerfile import ImageRoot, stages
from testkit.server_process import ANNOUNCEMENT, free_port
from websockets.sync.client import connect

pytestmark = pytest.mark.slow

WEB = ROOT / "clients" / "web"
DOCKERFILE = ROOT / "Dockerfile"
STEP = 600  # seconds one build or install may take (a cold pip cache downloads numpy)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    outside: Path  # a folder outside the repository


def clean_env() -> dict[str, str]:
    """This environment without the test plugins and the checkout on PYTHONPATH."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def run(argv: list[str | Path], cwd: Path) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, timeout=STEP, preexec_fn=die_with_parent())
    assert done.returncode == 0, f"{argv} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel built from the image's build context and installed in a new environment."""
    base = tmp_path_factory.mktemp("package")
    source, dist, outside = base / "source", base / "dist", base / "outside"
    outside.mkdir()
    for sources, _ in stages(DOCKERFILE)[0].copies():
        for name in sources:
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, source / name,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                source.mkdir(exist_ok=True)
                shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "build", "--outdir", dist, source], cwd=outside)
    [wheel], [sdist] = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    venv = base / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=outside)
    # as the image installs it: with the PostgreSQL driver
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", f"{wheel}[postgresql]"],
        cwd=outside)
    return Installed(wheel, sdist, venv, outside)


def page_files() -> set[str]:
    return {p.relative_to(WEB).as_posix() for p in WEB.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_and_sdist_carry_every_file_of_the_page(installed: Installed) -> None:
    wheel_names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = {f for f in page_files() if f"clients/web/{f}" not in wheel_names}
    assert not missing, f"not in the wheel: {sorted(missing)}"
    with tarfile.open(installed.sdist) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert not {f for f in page_files() if f"clients/web/{f}" not in in_sdist}


def test_the_plugin_api_ships_typed(installed: Installed) -> None:
    """``server/api/py.typed`` (PEP 561): mypy checks a plugin against the installed API."""
    assert "server/api/py.typed" in zipfile.ZipFile(installed.wheel).namelist()


def test_the_installed_lobby_is_the_wheels(installed: Installed) -> None:
    where = run([installed.venv / "bin" / "python", "-c",
                 "import asyncpg, clients, server; print(server.__file__); print(clients.__file__);"
                 "print(asyncpg.__file__)"],
                cwd=installed.outside)
    site = installed.venv / "lib"
    for line in where.splitlines():
        assert Path(line).is_relative_to(site), f"{line} is not the installed package's"


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def loaded_files(page: bytes) -> set[str]:
    """What the page loads: its links and scripts, and every module the scripts import."""
    found = set(re.findall(r'(?:src|href)="(?!data:|https?:|#)([^"]+)"', page.decode()))
    todo = [f for f in found if f.endswith(".js")]
    while todo:
        module = todo.pop()
        for imported in re.findall(r'from\s+"\./([^"]+)"', (WEB / module).read_text()):
            name = f"{Path(module).parent.as_posix()}/{imported}".lstrip("./")
            if name not in found:
                found.add(name)
                todo.append(name)
    return found


def serves_the_page(port: int) -> None:
    status, ctype, page = get(f"http://127.0.0.1:{port}/")
    assert (status, ctype) == (200, "text/html; charset=utf-8")
    assert page == (WEB / "index.html").read_bytes()
    files = loaded_files(page)
    assert "js/app.js" in files and "js/dom.js" in files, sorted(files)
    for name in sorted(files):
        status, ctype, body = get(f"http://127.0.0.1:{port}/{name}")
        assert status == 200, name
        assert body == (WEB / name).read_bytes(), name
        if name.endswith(".js"):
            assert ctype.startswith(("text/javascript", "application/javascript")), (name, ctype)


def answer(ws: object, request: dict[str, object]) -> dict[str, object]:
    """``request``'s reply (pushes before it are passed over)."""
    ws.send(json.dumps(request))  # type: ignore[attr-defined]
    while True:
        frame = json.loads(ws.recv(timeout=30))  # type: ignore[attr-defined]
        if frame.get("id") == request["id"]:
            return dict(frame)


def registers_and_logs_in(port: int) -> None:
    url = f"ws://127.0.0.1:{port}/ws"
    with connect(url, open_timeout=10) as ws:
        hello = json.loads(ws.recv(timeout=10))
        assert hello["event"] == "hello"
        reply = answer(ws, {"id": 1, "cmd": "register",
                            "args": {"name": "alice", "password": "a-long-password"}})
        assert reply["ok"] is True, reply
        assert reply["data"]["player"] == "alice"  # type: ignore[index]
    with connect(url, open_timeout=10) as ws:
        ws.recv(timeout=10)
        reply = answer(ws, {"id": 2, "cmd": "login",
                            "args": {"name": "ALICE", "password": "a-long-password"}})
        assert reply["ok"] is True, reply
        assert reply["data"]["player"] == "alice"  # type: ignore[index]


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    log: Path

    def ready(self) -> None:
        deadline = time.monotonic() + 60
        while ANNOUNCEMENT not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.log.read_text()}"
            assert time.monotonic() < deadline, f"not listening:\n{self.log.read_text()}"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@contextmanager
def start(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[Running]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent())
    running = Running(proc, log)
    try:
        running.ready()
        yield running
    finally:
        running.stop()


def test_installed_serve_serves_the_page_and_the_lobby(installed: Installed) -> None:
    work = installed.outside / "serve"
    work.mkdir()
    config = work / "matchlobby.toml"
    config.write_text(FAST_CONFIG)
    port = free_port()
    argv = [str(installed.venv / "bin" / "matchlobby"), "serve", "--config", str(config),
            "--db", str(work / "lobby.db"), "--host", "127.0.0.1", "--port", str(port)]
    with start(argv, work, clean_env(), work / "serve.log"):
        serves_the_page(port)
        registers_and_logs_in(port)
    assert (work / "lobby.db").is_file()


def test_the_images_command_serves_and_its_health_check_follows(
        installed: Installed) -> None:
    """The final stage's command with its environment and files; the health check's command
    exits 0 while the server runs and non-zero once it has stopped."""
    image = ImageRoot(stages(DOCKERFILE)[-1], ROOT, installed.outside / "image", installed.venv)
    env = image.environment()
    config = Path(env["MATCHLOBBY_CONFIG"])
    assert config.is_relative_to(image.root), "MATCHLOBBY_CONFIG names no file the image copies"
    text = config.read_text()
    database = re.search(r'^database = "(/[^"]+)"$', text, re.MULTILINE)
    assert database and Path(database.group(1)).parent.as_posix() == image.stage.last("VOLUME").strip('[]"')
    port = free_port()
    config.write_text(text.replace(database.group(1), image.path(database.group(1)))
                      .replace("port = 8765", f"port = {port}") + "\n" + FAST_CONFIG)
    assert f"port = {port}" in config.read_text()
    assert image.stage.last("EXPOSE") == "8765"

    def healthy() -> int:
        return subprocess.run(image.command("HEALTHCHECK"), env=env, cwd=image.workdir,
                              capture_output=True, timeout=60).returncode

    with start(image.command("ENTRYPOINT", "CMD"), image.workdir, env,
               installed.outside / "image.log"):
        serves_the_page(port)
        assert get(f"http://127.0.0.1:{port}/healthz")[0::2] == (200, b"ok\n")
        assert healthy() == 0
        assert Path(image.path(database.group(1))).is_file()
    assert healthy() != 0
