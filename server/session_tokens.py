"""Session tokens: what a client keeps to resume a login without the password.

A token is 32 random bytes (URL-safe base64, 43 characters). The database
holds only its SHA-256 hash, so a copy of the database resumes nobody's login.
A hash of a 256-bit random token needs no salt or slow hashing: it cannot be
guessed, only stolen, and the hash does not give it back.
"""

from __future__ import annotations

import hashlib
import secrets
import time

TOKEN_BYTES = 32
DAY = 86_400.0


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def expiry(days: float) -> str:
    """The moment ``days`` from now, as the log's timestamps read (``2026-12-30T10:15:02Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + days * DAY))
