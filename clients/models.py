"""Typed views of the replies clients depend on (DESIGN.md "Shapes").

A ladder's shape comes from the server: the ``ladders`` reply describes each
ladder's columns (key, label, type, decimals, help), the ``ladder`` reply
repeats them. :class:`Column` turns a value into the text people read by that
description alone, so any rating system is shown without knowing its name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

REAL_DECIMALS = 2
"""Places of a real number whose column names none."""
COMMON = frozenset({"rank", "of", "player", "active", "ladder", "system"})
"""Fields of every ladder row that no column describes."""


@dataclass(frozen=True)
class Column:
    """One column of a ladder's rows as the server describes it.

    ``type`` is ``integer``, ``real``, ``text`` or ``boolean``; a type this
    client does not know is shown as text.
    """

    key: str
    label: str
    type: str = "text"
    decimals: int | None = None
    help: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Column:
        decimals = d.get("decimals")
        return cls(str(d["key"]), str(d.get("label") or d["key"]), str(d.get("type", "text")),
                   decimals if isinstance(decimals, int) and not isinstance(decimals, bool)
                   else None, str(d.get("help") or ""))

    @classmethod
    def guess(cls, key: str, value: Any) -> Column:
        """A column for a value no description covers, typed by the value itself."""
        label = key.replace("_", " ").capitalize()
        if isinstance(value, bool):
            return cls(key, label, "boolean")
        if isinstance(value, int):
            return cls(key, label, "integer")
        if isinstance(value, float):
            return cls(key, label, "real")
        return cls(key, label, "text")

    @property
    def numeric(self) -> bool:
        return self.type in ("integer", "real")

    @property
    def places(self) -> int:
        """The decimal places a real number is shown with."""
        return REAL_DECIMALS if self.decimals is None else max(0, self.decimals)

    def text(self, value: Any) -> str:
        """``value`` as people read it: rounded to the column's places, yes/no, ``-`` if none."""
        if value is None:
            return "-"
        if self.type == "boolean":
            return "yes" if value else "no"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return str(value)
        if self.type == "integer":
            return str(round(value))
        if self.type == "real":
            return f"{value:.{self.places}f}"
        return str(value)

    def change_text(self, value: Any) -> str:
        """A signed difference (``new`` when there was nothing before)."""
        if value is None:
            return "new"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return str(value)
        if self.type == "integer":
            return f"{round(value):+d}"
        if self.type == "real":
            return f"{value:+.{self.places}f}"
        return f"{value:+}"


def guess_columns(row: Mapping[str, Any]) -> tuple[Column, ...]:
    """A row's columns when the server described none: the rating, the row's own fields in
    their order, the games."""
    own = [Column.guess(k, v) for k, v in row.items()
           if k not in COMMON and k not in ("rating", "games")]
    first = [Column.guess("rating", row["rating"])] if "rating" in row else []
    last = [Column.guess("games", row["games"])] if "games" in row else []
    return (*first, *own, *last)


def columns_from(described: Any, rows: Sequence[Mapping[str, Any]] = ()) -> tuple[Column, ...]:
    """The columns a reply describes, else those its first row suggests."""
    if isinstance(described, list) and described:
        return tuple(Column.from_dict(c) for c in described)
    return guess_columns(rows[0]) if rows else ()


@dataclass(frozen=True)
class LadderInfo:
    """One ladder of the ``ladders`` reply: its system and how its rows are shown."""

    ladder: str
    system: str
    system_title: str
    format: str
    updated: str
    live: bool
    players: int
    columns: tuple[Column, ...]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LadderInfo:
        return cls(d["ladder"], d["system"], d.get("system_title") or d["system"],
                   d.get("format", ""), d.get("updated", ""), bool(d.get("live", False)),
                   d.get("players", 0), columns_from(d.get("columns")))

    def column(self, key: str) -> Column | None:
        return next((c for c in self.columns if c.key == key), None)

    @property
    def rating_column(self) -> Column:
        """How the ladder's rating (the value history and changes record) is shown."""
        return self.column("rating") or Column("rating", "Rating", "real")


@dataclass(frozen=True)
class LadderRow:
    rank: int
    of: int
    player: str
    rating: float
    games: int
    active: bool
    extras: dict[str, Any] = field(default_factory=dict)
    ladder: str | None = None
    system: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LadderRow:
        known = {"rank", "of", "player", "rating", "games", "active", "ladder", "system"}
        return cls(d["rank"], d["of"], d["player"], d["rating"], d["games"], d["active"],
                   {k: v for k, v in d.items() if k not in known}, d.get("ladder"),
                   d.get("system"))

    def value(self, key: str) -> Any:
        """The row's field ``key`` (a column's), ``None`` when it has none."""
        if key in ("rank", "of", "player", "rating", "games", "active"):
            return getattr(self, key)
        return self.extras.get(key)

    def cells(self, columns: Sequence[Column]) -> list[str]:
        """The row's values under ``columns``, as people read them."""
        return [c.text(self.value(c.key)) for c in columns]


@dataclass(frozen=True)
class Ratings:
    player: str
    ratings: list[LadderRow]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ratings:
        return cls(d["player"], [LadderRow.from_dict(r) for r in d["ratings"]])

    def in_ladder(self, ladder: str) -> LadderRow | None:
        return next((r for r in self.ratings if r.ladder == ladder), None)


@dataclass(frozen=True)
class Whois(Ratings):
    online: bool = False
    status: str = "offline"
    last_login: str | None = None
    role: str = "player"
    matches: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Whois:
        return cls(d["player"], [LadderRow.from_dict(r) for r in d["ratings"]], d["online"],
                   d["status"], d.get("last_login"), d.get("role", "player"), d["matches"])


@dataclass(frozen=True)
class Ladder:
    ladder: str
    system: str
    total: int
    players: list[LadderRow]
    columns: tuple[Column, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ladder:
        return cls(d["ladder"], d["system"], d["total"],
                   [LadderRow.from_dict(r) for r in d["players"]],
                   columns_from(d.get("columns"), d["players"]))

    def cells(self) -> list[list[str]]:
        """Every row's values under the ladder's columns, as people read them."""
        return [r.cells(self.columns) for r in self.players]


@dataclass(frozen=True)
class LadderUpdated:
    """A ``ladder_updated`` push: many ratings moved at once. It lists the best-placed
    ``changed`` rows only (``more`` counts the others); a client showing the ladder fetches
    the rows it shows again (:meth:`clients.LobbyClient.ladder`)."""

    ladder: str
    event: int | None
    total: int
    changed: list[LadderRow]
    more: int = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LadderUpdated:
        return cls(d["ladder"], d.get("event"), d["total"],
                   [LadderRow.from_dict(r) for r in d["changed"]], d.get("more", 0))

    @property
    def moved(self) -> int:
        """How many players' ratings moved."""
        return len(self.changed) + self.more


@dataclass(frozen=True)
class HistoryEntry:
    ladder: str
    at: str
    before: float | None
    after: float
    change: float | None
    cause: dict[str, int]

    def cells(self, rating: Column) -> list[str]:
        """Before, after and change as people read them, shown as the ladder's ``rating``
        column (:attr:`LadderInfo.rating_column`)."""
        return [rating.text(self.before), rating.text(self.after), rating.change_text(self.change)]


@dataclass(frozen=True)
class History:
    player: str
    ladder: str | None
    entries: list[HistoryEntry]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> History:
        return cls(d["player"], d.get("ladder"),
                   [HistoryEntry(e["ladder"], e["at"], e["before"], e["after"], e["change"],
                                 dict(e["cause"])) for e in d["entries"]])


@dataclass(frozen=True)
class RatingChange:
    player: str
    before: float | None
    after: float
    change: float | None


@dataclass(frozen=True)
class MatchFinished:
    match: int
    ladder: str
    length: int | str
    winner: str
    how: str
    rated: bool
    changes: list[RatingChange]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MatchFinished:
        return cls(d["match"], d["ladder"], d["length"], d["winner"], d["how"],
                   d.get("rated", True),
                   [RatingChange(c["player"], c["before"], c["after"], c["change"])
                    for c in d["changes"]])

    def change_of(self, player: str) -> RatingChange:
        return next(c for c in self.changes if c.player == player)


@dataclass(frozen=True)
class StakeSide:
    """One player of a stake: their rating now, their chance to win, and the change of their
    rating if they win or lose."""

    player: str
    rating: float
    chance: float
    win: float
    loss: float


@dataclass(frozen=True)
class Stake:
    """What a match would put at stake now, as the ladder's system figures it; the player who
    asks or invites first."""

    ladder: str
    length: int | str
    players: tuple[StakeSide, StakeSide]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Stake:
        first, second = (StakeSide(p["player"], p["rating"], p["chance"], p["win"], p["loss"])
                         for p in d["players"])
        return cls(d["ladder"], d["length"], (first, second))

    @classmethod
    def maybe(cls, d: Any) -> Stake | None:
        """A stake, or ``None`` where the server sends none (an unrated match, a system that
        does not say)."""
        return cls.from_dict(d) if isinstance(d, Mapping) else None

    def of(self, player: str) -> StakeSide:
        return next(p for p in self.players if p.player.casefold() == player.casefold())


@dataclass(frozen=True)
class Invitation:
    """A standing invitation: ``inviter`` asks ``invitee`` to a match of ``length`` points
    (``"unlimited"``: unrated); ``expires_at`` is ``None`` when it never expires."""

    inviter: str
    invitee: str
    ladder: str
    length: int | str
    expires_at: str | None
    stake: Stake | None = None


@dataclass(frozen=True)
class Invitations:
    """The ``invitations`` reply: those the player sent and those they received."""

    sent: list[Invitation]
    received: list[Invitation]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], me: str) -> Invitations:
        return cls([Invitation(me, i["to"], i["ladder"], i["length"], i.get("expires_at"))
                    for i in d["sent"]],
                   [Invitation(i["from"], me, i["ladder"], i["length"], i.get("expires_at"),
                               Stake.maybe(i.get("stake")))
                    for i in d["received"]])


@dataclass(frozen=True)
class Invited:
    """The ``invite`` reply."""

    to: str
    ladder: str
    length: int | str
    expires_at: str | None
    replaced: bool
    stake: Stake | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Invited:
        return cls(d["to"], d["ladder"], d["length"], d.get("expires_at"),
                   bool(d.get("replaced", False)), Stake.maybe(d.get("stake")))


@dataclass(frozen=True)
class Session:
    """A login's session token and when it expires (``None``: not known, for a token given to
    :meth:`LobbyClient.resume`): ``resume`` logs in with it."""

    token: str
    expires_at: str | None = None

    @classmethod
    def maybe(cls, d: Any) -> Session | None:
        return cls(d["token"], d["expires_at"]) if isinstance(d, Mapping) else None


@dataclass(frozen=True)
class LoggedIn:
    """The reply of ``login``, ``register`` and ``resume`` (``session`` is ``None`` for
    ``resume``, which keeps the token it was given)."""

    player: str
    role: str
    match: dict[str, Any] | None
    session: Session | None
    other_sessions: int = 0  # after ``login``: the account's other sessions still open
    # how the player's matches ended while they were away ({"matches": [...], "more": N})
    while_away: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LoggedIn:
        return cls(d["player"], d.get("role", "player"), d.get("match"),
                   Session.maybe(d.get("session")), int(d.get("other_sessions") or 0),
                   d.get("while_away"))


@dataclass(frozen=True)
class PresenceChange:
    """One entry of the ``presence`` push: a player's status now (``ready``, ``playing`` or
    ``offline``)."""

    player: str
    status: str
    # to the opponent of a player who left a live match: the seconds until it may be claimed
    claim_in: int | None = None

    @property
    def online(self) -> bool:
        return self.status != "offline"

    @classmethod
    def list_from(cls, d: Mapping[str, Any]) -> list[PresenceChange]:
        """The entries of a ``presence`` push's data."""
        return [cls(str(e["player"]), str(e["status"]),
                    e["claim_in"] if isinstance(e.get("claim_in"), int) else None)
                for e in d.get("players") or ()
                if isinstance(e, Mapping) and "player" in e and "status" in e]
