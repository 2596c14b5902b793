"""Password hashing with scrypt (OWASP password-storage parameters by default)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from server.config import PasswordHashing

MIN_PASSWORD = 4
OWASP_COST = PasswordHashing()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=256 * n * r + 1024 * 1024, dklen=32)


def hash_password(password: str, cost: PasswordHashing = OWASP_COST) -> str:
    """A self-describing ``scrypt$N$r$p$salt$hash`` string with a fresh 16-byte salt."""
    salt = os.urandom(16)
    digest = _scrypt(password, salt, cost.n, cost.r, cost.p)
    return f"scrypt${cost.n}${cost.r}${cost.p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str | None) -> bool:
    """Constant-time check against a stored hash; accounts without one never match."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)
