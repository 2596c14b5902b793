"""The accounts, the configuration and the bounds every test runs with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server import PROTOCOL_VERSION, __version__
from server.config import PasswordHashing

ROOT = Path(__file__).resolve().parents[3]
"""The repository."""

PASSWORD = "pw-secret"
"""Every player's password."""
ADMIN = "root"
ADMIN_PASSWORD = "root-secret"
ADMINS = (ADMIN, "root2", "root3", "root4", "root5", "root6")
"""Directors for tests that need several at once (all with :data:`ADMIN_PASSWORD`)."""

FAST_HASHING = PasswordHashing(n=2**10)
"""scrypt at a cost a test can afford thousands of times."""
FAST_CONFIG = "[password_hashing]\nn = 1024\n"
""":data:`FAST_HASHING` as a configuration file, for the command line."""

HELLO = {"server": "matchlobby", "version": __version__, "protocol": PROTOCOL_VERSION}
"""What the server says first on every connection."""

ERROR_CODES = frozenset({"bad_request", "unknown_command", "not_logged_in", "forbidden",
                         "not_found", "conflict", "new_player", "rate_limited", "too_large",
                         "internal", "banned"})
"""The stable error codes of a refusal: nothing else may ever come back."""

PLAY_FREELY: dict[str, Any] = {"registrations_per_hour": 0, "invitations_per_minute": 0,
               "invitations_per_pair_per_minute": 0, "invitations_received_per_minute": 0,
               "account_logins_per_minute": 0, "address_logins_per_minute": 0}
"""The ``[limits]`` a test lifts to play as it likes: every player registers and logs in from
one address, the same accounts many times a minute, and the same players invite each other
many times a minute."""

LIVENESS = 2.0
"""A liveness bound, not a performance claim: a reply slower than this means the server (or
the connection) is stuck, whatever the machine."""

CLI_TIMEOUT = 60.0
"""How long one ``matchlobby`` command may take before the test gives up on it."""


def open_config(drop_timeout: float | None = None) -> str:
    """A configuration file with cheap hashing and the limits lifted: for tests whose clients
    all come from 127.0.0.1 and send flat out (the races, the crashes)."""
    server = f"[server]\ndrop_timeout = {drop_timeout}\n\n" if drop_timeout is not None else ""
    return (server + FAST_CONFIG + "\n"
            "[limits]\nmessages_per_second = 100000.0\nburst = 100000\n"
            "connections_per_address = 100000\nread_units_per_second = 0\n"
            + "".join(f"{key} = {value}\n" for key, value in PLAY_FREELY.items()))
