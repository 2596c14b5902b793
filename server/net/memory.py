"""Memory freed by clients that did not read, given back to the system.

glibc keeps what is freed: a heap shrinks only from its top, so the blocks a
burst of big frames left free below a block still in use stay resident, and
after one big block has been unmapped it serves blocks up to that size from
the heap. After a connection that held a lot of unread data has let it go,
:func:`trim_soon` asks glibc to hand the heap's free pages back
(``malloc_trim``), at most once a second, whatever the number of such
connections. Fixing the mmap threshold instead would send every socket read
(asyncio reads into a 256 KiB buffer) through mmap and munmap.

A no-op with another C library (musl, macOS).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import time
from typing import Any

log = logging.getLogger(__name__)
TRIM_DELAY = 1.0


def _glibc() -> Any | None:
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
        libc.gnu_get_libc_version  # noqa: B018 (glibc's, not another library's malloc_trim)
    except (OSError, AttributeError):
        return None
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _glibc()
_due = False


def trim_soon() -> None:
    """Give the heap's free pages back in :data:`TRIM_DELAY` seconds (once for many calls)."""
    global _due
    if _MALLOC_TRIM is None or _due:
        return
    _due = True
    asyncio.get_running_loop().call_later(TRIM_DELAY, _trim)


def _trim() -> None:
    global _due
    _due = False
    assert _MALLOC_TRIM is not None
    started = time.perf_counter()
    _MALLOC_TRIM(0)
    log.debug("malloc_trim: %.1f ms", (time.perf_counter() - started) * 1000)
