"""Processes a test starts die with the test's process, however that ends.

A ``matchlobby serve`` left running by a run stopped with SIGKILL (a timeout, a crashed
worker) would hold its port and file for ever. Linux's ``prctl(PR_SET_PDEATHSIG)`` has the
kernel send the child SIGKILL when the thread that started it ends: every ``Popen`` and
``create_subprocess_exec`` of the kit passes :func:`die_with_parent` as ``preexec_fn``.
Elsewhere it does nothing (the clean-ups after each test still stop them).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1

_prctl: Callable[..., int] | None = None
if sys.platform.startswith("linux"):
    try:
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` for a child that must not outlive this process (``None``: no way to)."""
    if _prctl is None:
        return None
    prctl, parent = _prctl, os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(1)

    return arm
