"""File descriptors: the process's open-file limit, and how many connections fit under it.

Every connection holds a descriptor. At the limit ``accept()`` fails with EMFILE: asyncio
then logs an error and stops accepting for a second, the kernel keeps completing TCP
handshakes into the listen queue, and new clients wait for an answer that never comes.
So the server raises its soft limit to the hard one at start and keeps its connections
below what is left once it has opened everything else.
"""

from __future__ import annotations

import logging
import os
import resource

log = logging.getLogger(__name__)

RESERVE = 64
"""Descriptors kept free beyond those open at start: database connections opened later
(PostgreSQL's pool grows to 5), log files, the page's files being served, a replay helper."""
UNLIMITED_TARGET = 1 << 20
"""The soft limit asked for when the hard limit is unlimited (Linux refuses more than
``fs.nr_open``, 1,048,576 by default)."""
FALLBACK_OPEN = 32
"""Descriptors assumed open when the system cannot list them (no /proc or /dev/fd)."""


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; ``(before, after)``.

    Raising it needs no privilege. Where the hard limit is unlimited the kernel has a
    lower ceiling of its own (``fs.nr_open`` on Linux, OPEN_MAX on macOS); the smaller
    targets are tried in turn and the old limit is kept if none is accepted.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft in (hard, resource.RLIM_INFINITY):
        return soft, soft
    targets = [_nr_open(), 10240] if hard == resource.RLIM_INFINITY else [hard]
    for target in targets:
        if target <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue
        return soft, target
    return soft, soft


def open_file_limit() -> int:
    """The soft RLIMIT_NOFILE now, as a number (an unlimited one counted as very large)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return UNLIMITED_TARGET if soft == resource.RLIM_INFINITY else int(soft)


def open_descriptors() -> int:
    """How many descriptors the process holds now."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder)) - 1  # listing the folder opens one
        except OSError:
            continue
    return FALLBACK_OPEN


def handshake_room(connections: int) -> int:
    """Sockets allowed beyond ``connections`` for clients still in their opening handshake
    (those get an HTTP refusal): a sixteenth, at least 16."""
    return max(16, connections // 16)


def connection_budget(configured: int, limit: int | None = None, in_use: int | None = None
                      ) -> int:
    """The number of connections to serve: ``configured`` (0: as many as the open-file
    limit allows), lowered with a warning when it would not fit under the limit together
    with its handshake room, the descriptors in use and :data:`RESERVE`."""
    limit = open_file_limit() if limit is None else limit
    in_use = open_descriptors() if in_use is None else in_use
    available = limit - in_use - RESERVE
    fits = available * 16 // 17 if available >= 17 * 16 else available - 16
    while fits > 1 and fits + handshake_room(fits) > available:  # rounding: a step at most
        fits -= 1
    fits = max(1, fits)
    if configured and configured <= fits:
        return configured
    if configured:
        log.warning("limits.max_connections = %d does not fit under the open-file limit "
                    "(%d, %d in use): at most %d connections; raise the limit (ulimit -n, "
                    "LimitNOFILE= in a systemd unit) to serve more", configured, limit, in_use,
                    fits)
    elif fits < 100:
        log.warning("the open-file limit (%d, %d in use) leaves room for only %d connections; "
                    "raise it (ulimit -n, LimitNOFILE= in a systemd unit)", limit, in_use, fits)
    return fits


def _nr_open() -> int:
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return UNLIMITED_TARGET
