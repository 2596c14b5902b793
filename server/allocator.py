"""glibc's allocator, made to give memory back once the clients that used it are gone.

Two things keep freed memory resident under glibc. Its mmap threshold rises
to the size of any mapped block that is freed (up to 32 MiB on 64 bits):
once a 250 KB reply has come and gone, later ones are carved from the heap.
And a heap shrinks only from its top: the blocks a burst left free below a
block still in use stay resident. So the threshold is fixed (even at its
default of 128 KiB, setting it turns the adjustment off), and after a
connection that held a lot of unread data is gone, :func:`trim_soon` hands
the heap's free pages back (``malloc_trim``, at most once a second).

No-ops with another C library (musl, macOS).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import time
from typing import Any

log = logging.getLogger(__name__)
M_MMAP_THRESHOLD = -3  # from glibc's malloc.h
MMAP_THRESHOLD = 128 * 1024
TRIM_DELAY = 1.0


def _glibc() -> Any | None:
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc only: musl's mallopt does nothing)
    except (OSError, AttributeError):
        return None
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    libc.malloc_trim.restype = ctypes.c_int
    return libc


_LIBC = _glibc()
_trim_due = False


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; False where there is no glibc."""
    if _LIBC is None:
        return False
    if _LIBC.mallopt(M_MMAP_THRESHOLD, threshold) != 1:
        log.warning("could not set the allocator's mmap threshold")
        return False
    return True


def trim_soon() -> None:
    """Give the heap's free pages back in :data:`TRIM_DELAY` seconds (once for many calls)."""
    global _trim_due
    if _LIBC is None or _trim_due:
        return
    _trim_due = True
    asyncio.get_running_loop().call_later(TRIM_DELAY, _trim)


def _trim() -> None:
    global _trim_due
    _trim_due = False
    assert _LIBC is not None
    started = time.perf_counter()
    _LIBC.malloc_trim(0)
    log.debug("malloc_trim took %.1f ms", (time.perf_counter() - started) * 1000)
