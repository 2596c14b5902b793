"""What the kernel holds for a connection: its send buffer capped, its unsent bytes counted,
and its buffers freed at once when a peer that does not read is cut off.

Linux grows a TCP socket's send buffer by itself up to ``net.ipv4.tcp_wmem``'s
maximum (4 MiB by default): a peer that never reads leaves about 3 MB queued in
the kernel for it, outside the server's memory and its budget of unread bytes,
and a socket closed the usual way keeps that queue while the peer holds the
connection open. Capping ``SO_SNDBUF`` bounds the queue (the kernel doubles the
value for its bookkeeping, and no longer grows it); ``SIOCOUTQ`` reads it; a
zero ``SO_LINGER`` turns the close into a reset, which frees it at once.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import socket
import struct
import termios
from asyncio import BaseTransport
from typing import Any

_OUTQ: int | None = getattr(termios, "TIOCOUTQ", None)  # = SIOCOUTQ on Linux
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 seconds: close() resets


def _socket(transport: BaseTransport) -> Any:
    return transport.get_extra_info("socket")


def cap_send_buffer(transport: BaseTransport, size: int) -> None:
    """Cap the socket's send buffer at ``size`` bytes (0: the kernel's default, growing)."""
    sock = _socket(transport)
    if size and sock is not None:
        with contextlib.suppress(OSError):  # closed meanwhile: nothing to cap
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)


def unsent(transport: BaseTransport) -> int:
    """Bytes the kernel holds that the peer has not acknowledged (0 where it cannot say).

    A system call (~3 µs here): under the default cap the transport asks only once the event
    loop's own buffer is not empty (the kernel's is full then).
    """
    sock = _socket(transport)
    if _OUTQ is None or sock is None:
        return 0
    count = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), _OUTQ, count)
    except (OSError, ValueError):  # closed, or a system whose sockets do not answer it
        return 0
    return count[0]


def reset_on_close(transport: BaseTransport) -> None:
    """Make the socket's close a reset: the kernel drops what it still holds for the peer
    instead of keeping it (for as long as the peer keeps its window shut) to deliver."""
    sock = _socket(transport)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
