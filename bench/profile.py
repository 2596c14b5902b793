"""A sampling profile of a running server (py-spy), and its top entries.

A bench starts :func:`spy` on the server's process around the part it times;
py-spy writes collapsed stacks (one line per distinct stack: frames joined by
``;``, then the count of samples). :func:`top` reads them back as the share of
samples each function is on the stack for (``total``) and on top of it
(``own``). Run alone, it prints both tables of a file written earlier:

    .venv/bin/python bench/profile.py FILE [--top 25] [--match server/]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

PY_SPY = Path(sys.executable).parent / "py-spy"
RATE = 250  # samples a second


@contextlib.asynccontextmanager
async def spy(pid: int, out: Path, rate: int = RATE) -> AsyncIterator[None]:
    """py-spy records ``pid`` while the block runs: the thread holding the interpreter lock
    (``--gil``), so the samples share out the server's Python CPU. Its stacks are in ``out``
    after it."""
    proc = await asyncio.create_subprocess_exec(
        str(PY_SPY), "record", "--nonblocking", "--gil", "-r", str(rate), "-f", "raw", "-o", str(out),
        "-p", str(pid), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    await asyncio.sleep(0.5)  # attached
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)  # py-spy writes what it has and exits
        _, err = await proc.communicate()
        if proc.returncode not in (0, -signal.SIGINT) and not out.exists():
            print(f"py-spy failed: {err.decode(errors='replace')[-500:]}", file=sys.stderr)


_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*)(?::\d+)?\)$")


@dataclass(frozen=True)
class Entry:
    function: str  # name (file), as py-spy shows it, without the line
    total: float  # share of samples with it on the stack
    own: float  # share of samples with it on top


OWN = ("server/", "ratings_plugin/", "clients/")


def _name(frame: str) -> str:
    """``compute (/x/ratings_plugin/book.py:12)`` -> ``compute (ratings_plugin/book.py)``: one
    entry per function, whatever line the sample was at and wherever the checkout is."""
    found = _FRAME.match(frame)
    if found is None:
        return frame
    path = found["file"]
    if "/site-packages/" in path:
        path = path.split("/site-packages/", 1)[1]
    elif re.search(r"/lib/python3[.\d]*/", path):
        path = re.split(r"/lib/python3[.\d]*/", path, maxsplit=1)[1]
    else:
        cuts = [path.rfind("/" + root) for root in OWN]
        if max(cuts) >= 0:
            path = path[max(cuts) + 1:]
    return f"{found['func']} ({path})"


def is_own(name: str) -> bool:
    """A function of the lobby's own code (not the standard library's or a package's)."""
    return any(f"({root}" in name for root in OWN)


def top(path: Path, n: int = 20, match: str = "") -> tuple[int, list[Entry], list[Entry]]:
    """The samples, the ``n`` functions of the lobby's own code most often on the stack, and
    the ``n`` functions of any code most often on top of it (only those whose name contains
    ``match``)."""
    total: Counter[str] = Counter()
    own: Counter[str] = Counter()
    samples = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_name(f) for f in stack.split(";")]
        frames = [f for f in frames if not f.startswith(("process ", "thread "))]
        samples += count
        for name in set(frames):
            total[name] += count
        if frames:
            own[frames[-1]] += count

    def entries(counter: Counter[str], own_only: bool) -> list[Entry]:
        names = [name for name, _ in counter.most_common()
                 if match in name and (is_own(name) or not own_only)][:n]
        return [Entry(name, total[name] / max(samples, 1), own[name] / max(samples, 1))
                for name in names]

    return samples, entries(total, True), entries(own, False)


def table(entries: list[Entry]) -> str:
    lines = ["| function | on the stack | on top |", "|---|---:|---:|"]
    lines += [f"| `{e.function}` | {e.total:.1%} | {e.own:.1%} |" for e in entries]
    return "\n".join(lines)


def report(path: Path, n: int = 20, match: str = "") -> str:
    samples, by_total, by_own = top(path, n, match)
    return (f"{samples} samples ({path.name})\n\nthe lobby's own functions most often on the "
            f"stack:\n{table(by_total)}\n\nmost often on top:\n{table(by_own)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("file", type=Path, help="collapsed stacks written by py-spy (-f raw)")
    parser.add_argument("--top", type=int, default=25, help="entries in each table (25)")
    parser.add_argument("--match", default="", help="only functions whose name (with its file) "
                        "contains this, e.g. server/ or ratings_plugin/")
    args = parser.parse_args(argv)
    print(report(args.file, args.top, args.match))
    return 0


if __name__ == "__main__":
    sys.exit(main())
