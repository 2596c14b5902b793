"""The hardening suites run their servers in a thread of the test process
(testkit.server_thread): the two threads must take turns quickly."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module", autouse=True)
def short_thread_switches() -> Iterator[None]:
    """Let the test's thread and the server's take turns quickly.

    With Python's default 5 ms switch interval, every reply waits for the other thread's
    time slice; these suites measure the server, not the interpreter's scheduling.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        yield
    finally:
        sys.setswitchinterval(old)
