"""A test run that is stopped leaves nothing behind: no PostgreSQL cluster, no server, no
temporary folder.

A real run of pytest (alone, or spread over two workers) runs a test that starts what the
suite's tests start: the run's PostgreSQL cluster, a ``matchlobby serve`` process, files in
its ``tmp_path``. Once the test says it is under way, the run is stopped as a crash, a
timeout or a person would stop it: SIGKILL to pytest alone, SIGTERM to its whole process
group (what ``timeout`` sends), SIGINT to the group (Ctrl-C). Then the server, the cluster's
postmaster, the cluster's folder and the run's base temporary folder must all be gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from testkit import postgres
from testkit.constants import ROOT
from testkit.probes import wait_until

HELD = textwrap.dedent('''
    import json, os, time
    from pathlib import Path

    from testkit import postgres
    from testkit.cli import admin_template
    from testkit.server_process import ServerProcess


    async def test_held(tmp_path: Path) -> None:
        url = postgres.server_url()
        assert url is not None
        db, config = admin_template(tmp_path / "lobby")
        server = ServerProcess(db, config).start()
        await server.ready()
        folder = url.partition("host=")[2]
        postmaster = int((Path(folder) / "data" / "postmaster.pid").read_text().split()[0])
        report = Path(os.environ["HELD_REPORT"])
        report.with_suffix(".tmp").write_text(json.dumps({
            "server": server.pid, "postmaster": postmaster, "cluster": folder,
            "tmp_path": str(tmp_path)}))
        report.with_suffix(".tmp").rename(report)  # whole when it appears
        time.sleep(600)  # until the run is stopped
''')
WAIT = 60.0  # a liveness bound: a process or folder left behind stays for ever


def as_from_a_shell() -> None:
    """The run starts with Ctrl-C's default action and the signal unblocked, as from a shell.
    An ignored or blocked SIGINT passes from a process to its children (and Python then
    installs no KeyboardInterrupt at all): what this test's own process does with it (a
    pytest-xdist worker, after the tests before it) must not decide how the run is stopped."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet waited for by its parent, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="processes are read from /proc")
@pytest.mark.parametrize(("workers", "stop", "whom"), [
    (0, signal.SIGKILL, "pytest"),  # a crash: nothing of its own clean-up runs
    (2, signal.SIGTERM, "group"),  # a timeout: `timeout` signals the process group
    (2, signal.SIGINT, "group"),  # Ctrl-C in a terminal
], ids=["sigkill", "timeout-workers", "ctrl-c-workers"])
async def test_a_stopped_run_leaves_nothing_behind(tmp_path: Path, workers: int,
                                                   stop: signal.Signals, whom: str) -> None:
    if postgres.binaries() is None:
        pytest.skip(postgres.MISSING)
    test = tmp_path / "test_held.py"
    test.write_text(HELD, encoding="utf-8")
    report, basetemp = tmp_path / "report.json", tmp_path / "base"
    env = {k: v for k, v in os.environ.items() if k != postgres.ENV}  # the run's own cluster
    env.update(HELD_REPORT=str(report), PYTHONPATH=os.pathsep.join(
        [str(ROOT / "tests" / "kit"), str(ROOT), env.get("PYTHONPATH", "")]))
    log = tmp_path / "run.log"
    output = log.open("wb")
    run = subprocess.Popen(
        # the repository's conftest.py as a plugin: the kit's hooks and fixtures, as in a run
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
         "-n", str(workers), f"--basetemp={basetemp}", "--rootdir", str(tmp_path),
         "-o", "asyncio_mode=auto", str(test)],
        # its output to a file: a pipe nobody reads until the end would stop it once full
        # and no standard input: in a worker of this run, its own is pytest-xdist's channel
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
        start_new_session=True, preexec_fn=as_from_a_shell)
    try:
        await wait_until(report.exists, WAIT, "the held test to start")
        held: dict[str, Any] = json.loads(report.read_text())
        assert alive(held["server"]) and alive(held["postmaster"]), held
        assert Path(held["cluster"]).is_dir() and basetemp.is_dir(), held
        if whom == "group":
            os.killpg(run.pid, stop)
        else:
            run.send_signal(stop)
        try:
            run.wait(WAIT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run did not end; it printed:\n{log.read_text()[-3000:]}"
                                 ) from None
        await wait_until(lambda: not alive(held["server"]), WAIT, "the server to end")
        await wait_until(lambda: not alive(held["postmaster"]), WAIT, "the cluster to stop")
        await wait_until(lambda: not Path(held["cluster"]).exists(), WAIT,
                         "the cluster's folder to go")
        await wait_until(lambda: not basetemp.exists(), WAIT, "the base temporary folder to go")
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(WAIT)
        output.close()
