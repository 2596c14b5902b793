#!/usr/bin/env python3
"""The container's health check: exit 0 when the lobby on this machine answers ``/healthz``.

Docker runs it inside the container (``HEALTHCHECK`` in the Dockerfile; the compose files do
the same). It uses the standard library alone, so it runs on the image's own Python: no curl
in a slim image. The port and TLS come from the configuration the server reads
(``MATCHLOBBY_CONFIG``); ``MATCHLOBBY_HEALTH_PATH`` names another address to ask.
"""

from __future__ import annotations

import os
import ssl
import sys
import tomllib
import urllib.request

WILDCARDS = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}


def health_url(config_path: str, path: str) -> str:
    """The server's own address of ``path``: its port, and https when ``[tls]`` is set."""
    with open(config_path, "rb") as f:
        config = tomllib.load(f)
    server = config.get("server", {})
    host = str(server.get("host", "127.0.0.1"))
    host = WILDCARDS.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    scheme = "https" if config.get("tls") else "http"
    return f"{scheme}://{host}:{int(server.get('port', 8765))}{path}"


def main() -> int:
    config = os.environ.get("MATCHLOBBY_CONFIG", "/etc/matchlobby/matchlobby.toml")
    try:
        url = health_url(config, os.environ.get("MATCHLOBBY_HEALTH_PATH", "/healthz"))
    except (OSError, ValueError, TypeError) as e:  # TOMLDecodeError is a ValueError
        print(f"matchlobby health check: cannot read the configuration {config}: {e} (it must "
              "be readable by the server's user)", file=sys.stderr)
        return 1
    # The certificate names the public host, not this loopback address: only liveness counts.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            ok = response.status == 200
    except (OSError, ValueError) as e:
        print(f"matchlobby health check: {url}: {e}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
