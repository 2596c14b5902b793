"""The event loop the server runs on: uvloop's where it is installed, else asyncio's own.

uvloop runs the loop, its sockets and its timers in C (libuv): the same server spends
about a tenth fewer instructions a live match on it (docs/PERFORMANCE.md), and asyncpg's
round trips cost less. asyncio's own loop stays a choice (``serve --loop asyncio``) and the
fallback where uvloop is not installed (it has no Windows build).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal

Kind = Literal["uvloop", "asyncio"]
KINDS: tuple[Kind, ...] = ("uvloop", "asyncio")


class LoopUnavailable(Exception):
    """The event loop asked for is not installed."""


def default_kind() -> Kind:
    """uvloop when it can be imported, else asyncio's loop."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def loop_factory(kind: Kind | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new loop of ``kind`` (the default when None)."""
    kind = kind or default_kind()
    if kind == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError as e:
        raise LoopUnavailable(f"uvloop is not installed ({e})") from None
    return uvloop.new_event_loop


def new_loop(kind: Kind | None = None) -> asyncio.AbstractEventLoop:
    return loop_factory(kind)()


def kind_of(loop: asyncio.AbstractEventLoop) -> Kind:
    """Which kind ``loop`` is (the server logs it as it starts)."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
