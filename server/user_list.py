"""``matchlobby user list`` and ``user log``: the accounts, and what was done to them, as tables
for a terminal."""

from __future__ import annotations

from collections.abc import Sequence

from server.api import Reader
from server.store import bans, now

LOG_LIMIT = 50  # the changes ``user log`` shows unless told


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns as wide as their widest cell, two spaces apart; the last one as it is."""
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header) - 1)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]])
                     .rstrip() for r in (header, *rows))


def _ban(until: str | None, reason: str | None) -> str:
    return bans.lasting(until) + (f": {reason}" if reason else "")


async def accounts(db: Reader, role: str | None, banned: bool) -> str:
    """Every account (a name with a password) in name order: role, when it was made and last
    logged in, and its ban in force."""
    rows = await db.fetchall(
        "SELECT p.name, p.role, p.created_at, p.last_login, b.until, b.reason, "
        "b.player_id IS NOT NULL FROM players p LEFT JOIN bans b ON b.player_id = p.id "
        "AND (b.until IS NULL OR b.until > ?) WHERE p.password_hash IS NOT NULL "
        "ORDER BY p.name_key, p.id", (now(),))
    shown = [[r[0], r[1], r[2], r[3] or "never", _ban(r[4], r[5]) if r[6] else "-"]
             for r in rows if (role is None or r[1] == role) and (r[6] or not banned)]
    if not shown:
        return "No accounts" + (" match." if role or banned else ".")
    return table(["NAME", "ROLE", "CREATED", "LAST LOGIN", "BANNED"], shown)


def _detail(kind: str, detail: str | None, reason: str | None) -> str:
    if kind == "ban":
        return _ban(detail, reason)
    if kind in ("role", "created"):
        return detail or ""
    return ""


async def account_log(db: Reader, name: str | None, limit: int = LOG_LIMIT) -> str:
    """The latest ``limit`` changes to the accounts (or to one), oldest first: when, whose,
    what and who made it (``cli:USER`` from the command line)."""
    where, params = ("WHERE p.name_key = ? ", (name.casefold(),)) if name else ("", ())
    rows = await db.fetchall(
        "SELECT c.at, p.name, c.kind, coalesce(c.by_name, by_p.name, 'cli'), c.detail, "
        "c.reason FROM account_changes c JOIN players p ON p.id = c.player_id "
        f"LEFT JOIN players by_p ON by_p.id = c.by_player {where}"
        "ORDER BY c.id DESC LIMIT ?", (*params, limit))
    if not rows:
        return "No account changes recorded" + (f" for {name}." if name else ".")
    shown = [[r[0], r[1], r[2], r[3], _detail(r[2], r[4], r[5])] for r in reversed(rows)]
    return table(["AT", "ACCOUNT", "CHANGE", "BY", "DETAIL"], shown)
