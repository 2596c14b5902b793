"""Rating systems: what the lobby and the ratings plugin call on a ladder's system.

A system is pure: no I/O, no asyncio. It parses its ladder options, makes
books (a ladder's standings in memory) that rate one unit at a time, says how
its ladders are shown (the columns, the order) and how likely one player is to
beat another. Systems are found through the ``matchlobby.rating_systems``
entry points; a ladder's ``system`` in the configuration names one.

This module holds the protocols as the callers see them. A system is written
on :mod:`server.api.systems`' base classes, which give every member but the
core a default; the optional capabilities (a fast replay, tail corrections,
history loading, a shared field) are described there too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, Protocol

from server.api.records import Game, RatedUnit

ColumnKind = Literal["integer", "real", "text", "boolean"]


@dataclass(frozen=True)
class Column:
    """One column of a ladder's rows, as clients show it.

    ``key`` is the row's field; ``decimals`` the places a real number is shown
    with (the JSON keeps every digit); ``help`` explains the number to people.
    """

    key: str
    label: str
    kind: ColumnKind
    decimals: int | None = None
    help: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "label": self.label, "type": self.kind}
        if self.decimals is not None:
            out["decimals"] = self.decimals
        if self.help:
            out["help"] = self.help
        return out


class Standing(Protocol):
    """What every system's standing has (systems add their own fields): a frozen dataclass
    is best (:class:`server.api.StandingBase`), since books share standings and never change
    one."""

    @property
    def player(self) -> str: ...

    @property
    def rating(self) -> float:
        """The value the ladder is ordered by and history records."""

    @property
    def games(self) -> int:
        """Rated games played on the ladder."""

    @property
    def last_played(self) -> date | None:
        """The day of the player's latest rated game (inactivity counts from it)."""


class Book(Protocol):
    """A ladder's standings in memory, rated one unit at a time (write one on
    :class:`server.api.BookBase`).

    ``standings`` holds each player's :class:`Standing` by name; a player it
    does not hold has :meth:`new_standing`'s. :meth:`compute` leaves the book
    as it is and returns the new standing of every player whose standing the
    unit changes (a system rated game by game applies the unit's games one
    after another); the caller commits them and then :meth:`accept`\\ s them,
    so nothing is seen before it is durable.
    """

    standings: dict[str, Any]

    def new_standing(self, player: str) -> Any: ...

    def compute(self, unit: RatedUnit) -> dict[str, Any]: ...

    def accept(self, new: Mapping[str, Any], unit: RatedUnit) -> None: ...

    def predict(self, game: Game) -> float:
        """The probability that side A wins ``game``, from the standings the book holds now (a
        player it does not hold yet has :meth:`new_standing`'s): the system's own expectation,
        which ``matchlobby evaluate`` scores against what happened."""


LogRow = tuple[int, int | None, str, str, str, int | None, int, int, str, str | None]
"""One logged match as :class:`PlainReplay` reads it: match id, event id, finished at, side A,
side B, length, score A, score B, played on (YYYY-MM-DD), unrated reason."""
HistoryPair = tuple[int, float, float, int, float, float, int, int | None, str]
"""The two history rows of one match: the first player's id, rating before and after (the two
in ``str.casefold`` order of their names), the second's, then the match id, event id and time."""


class NotPlain(Exception):
    """A log row a :class:`PlainReplay` does not rate: replay the ladder through books."""


class PlainReplay(Protocol):
    """A ladder of single matches replayed with plain numbers, bit for bit as books would."""

    def pairs(self, log: Iterable[LogRow]) -> Iterator[HistoryPair]:
        """Each rated match's history rows, in order; raises :class:`NotPlain` at a row it
        does not take, before producing anything for it."""

    def seed(self, standings: Iterable[Any]) -> None:
        """Start from these standings instead of from empty."""

    def standings(self) -> dict[str, Any]:
        """Every player's standing after the rows so far."""


@dataclass(frozen=True)
class StoredStanding:
    """A standing as the ratings plugin stores it: the common fields and the system's own."""

    rating: float
    games: int
    last_played: str | None
    state: dict[str, Any]


class RatingSystem(Protocol):
    """What the lobby and the ratings plugin call on a system.

    Write a system on :class:`server.api.SystemBase`, which gives every member
    but the core a default. The optional capabilities (a fast replay, tail
    corrections, history loading, a shared field) are not members: see
    :mod:`server.api.systems`.
    """

    @property
    def name(self) -> str:
        """The name a configuration uses (``fibs``)."""

    @property
    def title(self) -> str:
        """The name people read (``FIBS``)."""

    @property
    def live_matches(self) -> bool:
        """Players may play live matches on its ladders, each rated when it ends."""

    @property
    def rates_each_result(self) -> bool:
        """An event's results are rated one by one as they are entered, like live matches;
        otherwise an event is rated as one unit when it closes."""

    @property
    def match_lengths(self) -> bool:
        """Its games are matches to a length: a scored result's winner reaches the length and
        the loser stays below it (backgammon)."""

    def parse_options(self, table: Mapping[str, Any]) -> Any:
        """A ladder's options from its configuration (the keys besides ``name`` and
        ``system``); raises ``ValueError`` naming the problem."""

    def option_keys(self) -> frozenset[str]:
        """The configuration keys it reads."""

    def doubles(self, options: Any) -> bool: ...

    def new_book(self, options: Any) -> Book: ...

    def check_game(self, options: Any, game: Game) -> None:
        """Refuse a game its ladders cannot rate (raises ``ValueError`` with the reason)."""

    def counts(self, options: Any, game: Game) -> bool:
        """Whether the game moves ratings at all: an unrated game does not, nor an unlimited
        one on a system of live matches or match lengths (see :func:`server.api.rules.counts`)."""

    def initial_rating(self, options: Any) -> float | None:
        """What history shows as a newcomer's rating before their first unit (``None``: they
        have none yet)."""

    def columns(self, options: Any) -> Sequence[Column]:
        """The row fields clients show, in order (besides rank, player and the active mark)."""

    def row(self, options: Any, standing: Any, active: bool) -> dict[str, Any]:
        """A ladder row's fields for a standing: ``rating``, ``games``, ``active`` and the
        system's own, as :meth:`columns` names them."""

    def is_active(self, options: Any, standing: Any, as_of: date | None) -> bool:
        """Whether the player counts as active on ``as_of`` (inactive players are listed after
        the active ones; inactivity never changes a rating)."""

    def order(self, standing: Any) -> float:
        """Higher first; equal values share a rank."""

    def expectation(self, options: Any, a: Any, b: Any, length: int | None) -> float:
        """The probability that A beats B in a game (of ``length`` points where it matters)."""

    def encode(self, standing: Any) -> StoredStanding: ...

    def decode(self, options: Any, player: str, stored: StoredStanding) -> Any: ...


@dataclass(frozen=True)
class LadderConfig:
    """A configured ladder: its name, its system and the options parsed by that system;
    ``table`` is its options as the configuration wrote them (the keys besides ``name`` and
    ``system``), so a command can apply more on top and parse them again."""

    name: str
    system: RatingSystem
    options: Any
    table: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def format(self) -> str:
        return "doubles" if self.system.doubles(self.options) else "singles"
