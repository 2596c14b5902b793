"""What the kernel holds for a server's TCP connections, read from /proc (Linux).

``tx_queue`` of ``/proc/net/tcp`` is what ``SIOCOUTQ`` gives the socket's owner: the bytes
written to the socket that the peer has not acknowledged, sent or not. For a peer that
does not read it is what the kernel keeps on its behalf, outside the server's memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
STATES = {1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
          6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN",
          11: "CLOSING"}


@dataclass(frozen=True)
class TcpSocket:
    state: str
    queued: int
    """Bytes sent and not acknowledged, or not sent yet (``tx_queue``)."""


def available() -> bool:
    return TABLES[0].exists()


def server_side(port: int) -> dict[int, TcpSocket]:
    """The sockets on ``port``'s side of its connections (the listening one left out), by the
    peer's port: however they were closed, as long as the kernel keeps them."""
    found: dict[int, TcpSocket] = {}
    for table in TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, state = fields[1], fields[2], int(fields[3], 16)
            if int(local.rsplit(":", 1)[1], 16) != port or state == 10:
                continue
            queued = int(fields[4].split(":")[0], 16)
            found[int(remote.rsplit(":", 1)[1], 16)] = TcpSocket(STATES.get(state, str(state)),
                                                                 queued)
    return found


def tcp_memory() -> int:
    """Bytes the kernel has given to the buffers of every TCP socket of the host
    (``/proc/net/sockstat``: ``TCP: ... mem`` pages): other processes' included."""
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            words = line.split()
            return int(words[words.index("mem") + 1]) * os.sysconf("SC_PAGE_SIZE")
    return 0
