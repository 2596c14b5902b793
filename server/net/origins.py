"""Which browser pages may open a WebSocket to the lobby (the ``Origin`` header).

A browser names the page's origin in every WebSocket handshake; another site's
page must not act for the person using it. The request's own ``Host`` proves
nothing: a page at ``http://evil.example:8765`` whose name is made to resolve to
this server (DNS rebinding) sends ``Host: evil.example:8765`` and ``Origin:
http://evil.example:8765``. So origins are compared with a list known at start:
``limits.origins`` when set (``"*"``: any), else the server's own origins, from the
address it listens on. Clients that send no ``Origin`` (every non-browser
client) are not concerned.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("", "0.0.0.0", "::")
ORIGIN_RE = re.compile(r"https?://(\[[0-9a-f:.]+\]|[^/:\[\]@?#\s]+)(:[0-9]{1,5})?")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_part(host: str) -> str:
    """The host as it appears in a URL: an IPv6 address in brackets, names in lower case."""
    host = host.strip("[]").lower()
    return f"[{host}]" if ":" in host else host


def own_origins(host: str, ports: Iterable[int], tls: bool) -> frozenset[str]:
    """The origins of the server's own page: its address (every loopback name for a loopback
    address, or for a wildcard one) and each port, without the port when it is the scheme's
    default (as browsers write it)."""
    scheme = "https" if tls else "http"
    default_port = 443 if tls else 80
    names = {_host_part(host)} if host not in WILDCARDS else set()
    if host in WILDCARDS or is_loopback(host):
        names.update(LOOPBACK_NAMES)
    origins = set()
    for port in ports:
        for name in names:
            origins.add(f"{scheme}://{name}:{port}")
            if port == default_port:
                origins.add(f"{scheme}://{name}")
    return frozenset(origins)


def normalise(origin: str) -> str:
    """Scheme and host are case-insensitive; a configured origin may end with ``/``."""
    return origin.strip().rstrip("/").lower()


class OriginPolicy:
    """The allowlist a server checks every browser's handshake against."""

    def __init__(self, configured: Iterable[str], host: str, ports: Iterable[int],
                 tls: bool) -> None:
        listed = {normalise(o) for o in configured}
        self.configured = bool(listed)
        self.any = "*" in listed
        self.allowed = frozenset(listed) if listed else own_origins(host, ports, tls)
        self.wildcard_host = host in WILDCARDS

    def malformed(self) -> list[str]:
        """Configured entries no browser ever sends (``lobby.example.org`` without a scheme,
        a path): they allow nothing, which an operator should hear about."""
        return sorted(o for o in self.allowed if self.configured and o not in ("*", "null")
                      and ORIGIN_RE.fullmatch(o) is None)

    def allows(self, origin: str) -> bool:
        return self.any or normalise(origin) in self.allowed

    def describe(self) -> str:
        """One line for the log at start: who may connect from a browser, and how to change it."""
        if self.any:
            return "browsers may connect from any origin (limits.origins = [\"*\"])"
        shown = ", ".join(sorted(self.allowed))
        if self.configured:
            return f"browsers may connect from {shown} (limits.origins)"
        if self.wildcard_host:
            return (f"listening on every address: browsers may connect only from {shown}; "
                    "pages opened at any other address are refused until limits.origins "
                    "lists them (such as \"http://lobby.example.org:8765\")")
        return (f"browsers may connect from {shown}; "
                "list other page addresses in limits.origins")
