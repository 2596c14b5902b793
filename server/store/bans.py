"""The bans table: an account that may not log in until a time (or ever), and why.

A ban is a row per account (``until`` NULL: no end); one that has ended stays until the
account is banned again or unbanned, and lets the account in. Banning and unbanning append
their ``account_changes`` row in the same transaction, so every server ends the account's
open login (a ban) within a second, whichever process made it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from server.api import Tx
from server.store import account_changes as changes
from server.store.handle import Reads


def parse_until(text: str) -> datetime:
    """``YYYY-MM-DD`` (the ban ends as that day begins, UTC) or a full ISO 8601 time (UTC
    unless it says otherwise), as a UTC time; raises ``ValueError`` with a sentence."""
    value = text.strip()
    try:
        when = datetime.fromisoformat(value)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"{text[:40]!r} is not a date (YYYY-MM-DD) or an ISO 8601 time "
                         "(YYYY-MM-DDTHH:MM[:SS][+HH:MM])") from None


def stamp(when: datetime) -> str:
    """``when`` as stored: ``2027-01-15T00:00:00Z``, the year in four digits (``%Y`` leaves
    years before 1000 short), so the stored ends sort as the times do."""
    return f"{when.year:04d}-{when:%m-%dT%H:%M:%S}Z"


def future_end(text: str, at: str) -> str:
    """``text`` (as :func:`parse_until` takes it) as a ban's stored end, refused with a
    sentence (``ValueError``) unless it is later than ``at`` (a timestamp of ``now()``): the
    command line and the lobby say it alike."""
    end = parse_until(text)
    if end <= datetime.fromisoformat(at):
        raise ValueError(f"{shown_until(stamp(end))} has begun already: a ban ends later "
                         "than now")
    return stamp(end)


def shown_until(until: str) -> str:
    """The ban's end as people read it: a date alone when it ends as a day begins."""
    day, _, time = until.partition("T")
    if time in ("", "00:00:00Z"):
        return day
    return f"{day} {time.rstrip('Z').removesuffix(':00')} UTC"


def lasting(until: str | None) -> str:
    """How long a ban lasts, as every server-side message words it: ``until 2027-01-15``
    or ``with no end date``."""
    return "with no end date" if until is None else f"until {shown_until(until)}"


def refusal(name: str, until: str | None, reason: str | None) -> str:
    """Why ``name`` may not log in, in one sentence."""
    return f"The account {name} is banned {lasting(until)}" + (f": {reason}" if reason else ".")


def told(until: str | None, reason: str | None) -> str:
    """What a banned player's open connection is told before it is closed."""
    return f"You have been banned {lasting(until)}" + (f": {reason}" if reason else ".")


async def active(db: Reads | Tx, player_id: int, at: str) -> tuple[str | None, str | None] | None:
    """The account's ban in force at ``at``: its end (``None``: no end) and reason."""
    row = await db.fetchone("SELECT until, reason FROM bans WHERE player_id = ? "
                            "AND (until IS NULL OR until > ?)", (player_id, at))
    return None if row is None else (row[0], row[1])


async def ban(tx: Tx, player_id: int, until: str | None, reason: str | None, by: int | None,
              by_name: str, at: str) -> int:
    """Ban the account (replacing a ban it had) and record it; the change's id."""
    await tx.execute("DELETE FROM bans WHERE player_id = ?", (player_id,))
    await tx.execute("INSERT INTO bans (player_id, until, reason, by_player, by_name, at) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (player_id, until, reason, by, by_name, at))
    return await changes.record(tx, player_id, changes.BAN, by, at, by_name, until, reason)


async def unban(tx: Tx, player_id: int, by: int | None, by_name: str, at: str) -> bool:
    """Lift the account's ban in force (recorded); whether it had one."""
    if await active(tx, player_id, at) is None:
        return False
    await tx.execute("DELETE FROM bans WHERE player_id = ?", (player_id,))
    await changes.record(tx, player_id, changes.UNBAN, by, at, by_name)
    return True
