"""Run every benchmark in bench/ one after another and print a summary (``make bench``).

The known benches run in this order, those missing being skipped: peklo.py,
live_matches.py, latency.py, connections.py, event_close.py, replay.py; any
other ``bench/*.py`` (not starting with ``_``) runs after them. Each one's
output is shown as it comes; the summary repeats, for each bench, its exit
status, its wall time and its lines that state a target or a ratio.

Run from the repository root:  .venv/bin/python bench/run_all.py [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ORDER = ["peklo", "live_matches", "latency", "connections", "event_close", "replay"]
NOT_BENCHES = {"run_all", "__init__"}
SUMMARY = re.compile(r"target|ratio|met\b", re.IGNORECASE)


def benches() -> list[Path]:
    found = {p.stem: p for p in BENCH.glob("*.py")
             if p.stem not in NOT_BENCHES and not p.stem.startswith("_")}
    return [found.pop(n) for n in ORDER if n in found] + [found[n] for n in sorted(found)]


def run(path: Path) -> tuple[int, float, list[str]]:
    """Run one bench from the repository root; (exit status, seconds, summary lines)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(path)], cwd=BENCH.parent, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if SUMMARY.search(line) and not line.startswith("|"):
            lines.append(line.rstrip())
    status = proc.wait()
    return status, time.perf_counter() - start, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="run only these benches (file names without .py)")
    parser.add_argument("--list", action="store_true", help="list the benches and exit")
    args = parser.parse_args(argv)
    paths = benches()
    if args.names:
        unknown = set(args.names) - {p.stem for p in paths}
        if unknown:
            parser.error(f"no such bench: {', '.join(sorted(unknown))}")
        paths = [p for p in paths if p.stem in args.names]
    if args.list:
        print("\n".join(p.name for p in paths))
        return 0
    missing = [n for n in ORDER if not (BENCH / f"{n}.py").exists()]
    results = []
    for path in paths:
        print(f"\n===== bench/{path.name} =====\n", flush=True)
        results.append((path, *run(path)))
    print("\n===== summary =====\n")
    for path, status, seconds, lines in results:
        print(f"bench/{path.name}: {'ok' if status == 0 else f'exit status {status}'}, "
              f"{seconds:.0f} s")
        for line in lines:
            print(f"    {line}")
    if missing:
        print(f"not present (skipped): {', '.join(f'bench/{n}.py' for n in missing)}")
    return 1 if any(status != 0 for _, status, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
