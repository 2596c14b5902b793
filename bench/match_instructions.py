"""Benchmark: the instructions a live match costs the server, counted, not timed.

CPU time a match moves by 10-20 % from one run to the next on a shared machine (figure 1d),
more than most changes to the request path are worth; the count of instructions the server's
process executes barely moves (within 0.1-0.5 % run to run). The server runs under
valgrind's callgrind, instrumented only while the measured matches are played (start-up and
warm-up are not counted), with the clients of ``bench/live_matches.py`` playing invite, join
and resign; it prints the instructions a match of each thread and of the whole process, and
with ``--compare REV`` the same for the server of another commit (a copy from ``git
archive``, run with this venv's packages) and the ratio.

One pair (the default) plays one match at a time, so every batch holds one job and the
count is the same run after run on a quiet machine (within 0.5 %; with other work on the
cores, a few per cent more, as timers fire more often a match); more pairs batch their
writes as the live bench does, and the count then moves a little with how the batches fall.
With ``--compare`` and a clean working tree both servers run from ``git archive`` copies.
Instructions are not time: a
system call counts as one, and the kernel's work (sockets, fsync) is not counted at all.

Needs valgrind (Debian: ``apt-get install valgrind``). Run from the repository root:
    .venv/bin/python bench/match_instructions.py [--compare REV] [--pairs N] [--matches N]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the repository's packages, whatever the venv's install holds
    sys.path.insert(0, str(ROOT))

from bench._harness import bench_env, free_port  # noqa: E402
from bench.live_matches import (  # noqa: E402
    Player,
    checkout,
    close_pairs,
    config_text,
    connect_pairs,
    play,
)


async def count(tree: Path, tmp: Path, label: str, pairs: int, matches: int,
                warmup: int) -> dict[str, float]:
    """Instructions a match, by thread (``total``: the process), of the server of ``tree``."""
    config = tmp / f"{label}.toml"
    config.write_text(config_text(pairs, tree))
    out = tmp / f"callgrind.{label}"
    port = free_port()
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
           "--dump-instr=no", "--dump-line=no", f"--callgrind-out-file={out}",
           sys.executable, "-m", "server.cli", "serve", "--db", str(tmp / f"{label}.db"),
           "--port", str(port), "--config", str(config)]
    with open(tmp / f"{label}.log", "wb") as log:
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE,
                                                    stderr=log, cwd=tmp, env=bench_env(tree))
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 600)
            if b"listening" not in line:
                raise RuntimeError(f"the server did not start: {line!r}; see {tmp / label}.log")
            couples = await connect_pairs(f"ws://127.0.0.1:{port}/ws", pairs, "p")
            for _ in range(warmup):
                await asyncio.gather(*(play(a, b, 1) for a, b in couples))
            await _instrument(proc.pid, "on")

            async def pair(a: Player, b: Player) -> None:
                for i in range(matches):
                    await play(a, b, i)

            await asyncio.gather(*(pair(a, b) for a, b in couples))
            await _instrument(proc.pid, "off")
            await close_pairs(couples)
        finally:
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
    played = pairs * matches
    threads: dict[str, float] = {}
    for path in sorted(tmp.glob(f"callgrind.{label}*")):
        text = path.read_text(errors="replace")
        found = sum(int(n) for n in re.findall(r"^totals: (\d+)", text, re.MULTILINE))
        if found:
            threads[path.name.rsplit("-", 1)[-1]] = found / played
    loop = threads.pop("01", 0.0)  # the main thread: the event loop
    return {"total": loop + sum(threads.values()), "loop": loop,
            "others": sum(threads.values())}


def _clean() -> bool:
    """Whether the working tree is HEAD's (its server can then be counted from a copy)."""
    status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True)
    return status.returncode == 0 and not status.stdout.strip()


async def _instrument(pid: int, state: str) -> None:
    proc = await asyncio.create_subprocess_exec("callgrind_control", "-i", state, str(pid),
                                                stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    if await proc.wait() != 0:
        raise RuntimeError(f"callgrind_control -i {state} failed")


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="match-instructions-") as name:
        tmp = Path(name)
        sides: list[tuple[str, Path]] = [("now", ROOT)]
        if args.compare:
            if _clean():  # like against like: both servers from `git archive` copies
                sides = [("now", checkout("HEAD", tmp / "now"))]
            sides.append((args.compare, checkout(args.compare, tmp / "tree")))
        print(f"pairs: {args.pairs}; {args.matches} matches a pair counted after "
              f"{args.warmup} each not counted; valgrind's callgrind\n")
        print("| server | M instructions a match | the event loop's thread | other threads |")
        print("|---|---:|---:|---:|")
        counted = {}
        for label, tree in sides:
            c = counted[label] = await count(tree, tmp, re.sub(r"\W", "_", label), args.pairs,
                                             args.matches, args.warmup)
            print(f"| {label} | {c['total'] / 1e6:.3f} | {c['loop'] / 1e6:.3f} | "
                  f"{c['others'] / 1e6:.3f} |", flush=True)
        if args.compare:
            now, then = counted["now"], counted[args.compare]
            print(f"\nnow / {args.compare}: instructions a match {now['total'] / then['total']:.3f}"
                  f" (ratio), the event loop's thread {now['loop'] / then['loop']:.3f}, "
                  f"other threads {now['others'] / then['others']:.3f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--compare", metavar="REV", help="also count the server of commit REV")
    parser.add_argument("--pairs", type=int, default=1,
                        help="pairs of clients playing at once (1: the same count every run)")
    parser.add_argument("--matches", type=int, default=150, help="matches each pair plays (150)")
    parser.add_argument("--warmup", type=int, default=3, help="matches each pair plays first (3)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("match_instructions: valgrind is not installed (Debian: apt-get install valgrind);"
              " skipped")
        return 0
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
