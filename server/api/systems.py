"""The base classes a rating system is written on, and the optional capabilities the ratings
plugin looks for.

A system written on :class:`SystemBase` and :class:`BookBase` defines its
core and nothing else:

- descriptor: ``name``, ``title``; ``live_matches``, ``rates_each_result``,
  ``match_lengths``, ``doubles_allowed``, ``draws`` when they are true;
- options: ``keys`` (its own configuration keys) and :meth:`SystemBase.read_options`;
- compute: :meth:`SystemBase.new_book`, the book's :meth:`BookBase.new_standing`
  and either :meth:`BookBase.rate_game` (a unit's games rated one after another)
  or :meth:`BookBase.compute` (a unit rated as a whole);
- expectation: :meth:`SystemBase.expectation` (the book's :meth:`BookBase.predict`
  uses it for singles).

Everything else of :class:`server.api.RatingSystem` has a default here,
documented with each method. The optional capabilities are not part of the
base: a system (or its book) that has the member has the capability, and the
ratings plugin finds it through :func:`plain_replay`, :func:`tail_corrections`,
:func:`live_outcomes`, :func:`history_loading` and :func:`shared_field`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from datetime import date
from typing import Any, Generic, Protocol, TypeVar, cast, get_args, get_origin, get_type_hints

from server.api import rules
from server.api.rating import (
    Book,
    Column,
    LadderConfig,
    LogRow,
    PlainReplay,
    RatingSystem,
    StoredStanding,
)
from server.api.records import Game, RatedUnit


@dataclass(frozen=True, slots=True)
class StandingBase:
    """A player's standing on one ladder; a system's standing adds its own fields after these
    (each with a default). Frozen: a book never changes a standing, it makes a new one.

    ``rating`` is what the ladder is ordered by and history records; ``games`` the rated games
    the player has played on the ladder (a player with none is not listed); ``last_played``
    the day of their latest rated game (for inactivity).
    """

    player: str
    rating: float
    games: int = 0
    last_played: date | None = None


@dataclass(frozen=True)
class LadderOptions:
    """A ladder's options: what :meth:`SystemBase.parse_options` reads for every ladder
    (``format``, ``inactivity_days``); a system's options add its own fields (with defaults)."""

    doubles: bool = False
    inactivity_days: int | None = rules.DEFAULT_INACTIVITY_DAYS


Opts = TypeVar("Opts", bound=LadderOptions)
S = TypeVar("S", bound=StandingBase)

_BASE_FIELDS = frozenset(f.name for f in fields(StandingBase))
_CASTS: dict[Any, Any] = {int: int, float: float, str: str, bool: bool,
                          int | None: int, float | None: float, str | None: str,
                          bool | None: bool}


_Own = tuple[tuple[str, Any, Any], ...]


def _codec(kind: type) -> tuple[Any, _Own]:
    """A standing class's cast for a stored rating, and its own fields: (name, cast for a
    stored value or ``None``, default or ``MISSING``)."""
    found = _CODECS.get(kind)
    if found is None:
        hints = get_type_hints(kind)
        found = (_CASTS[hints["rating"]],
                 tuple((f.name, _CASTS.get(hints[f.name]), f.default) for f in fields(kind)
                       if f.name not in _BASE_FIELDS))
        _CODECS[kind] = found
    return found


def _own_fields(kind: type) -> _Own:
    return _codec(kind)[1]


_CODECS: dict[type, tuple[Any, _Own]] = {}


class BookBase(ABC, Generic[Opts, S]):
    """A ladder's standings in memory (:class:`server.api.Book`), rated one unit at a time.

    Define :meth:`new_standing`, and :meth:`rate_game` for a system that rates
    a unit's games one after another, or :meth:`compute` for one that rates a
    unit as a whole.
    """

    def __init__(self, system: SystemBase[Opts, S], options: Opts) -> None:
        self.system = system
        self.options = options
        self.standings: dict[str, S] = {}

    @abstractmethod
    def new_standing(self, player: str) -> S:
        """A newcomer's standing (no games yet)."""

    def standing(self, player: str) -> S:
        """The player's standing now, a newcomer's when the book holds none."""
        return self.standings.get(player) or self.new_standing(player)

    def rate_game(self, game: Game, a: S, b: S) -> tuple[S, S]:
        """The two standings after one rated singles ``game`` between ``a`` (side A) and ``b``,
        with the system's fields changed; the default :meth:`compute` then counts the game and
        its day in ``games`` and ``last_played``."""
        raise NotImplementedError(f"{type(self).__name__} defines neither rate_game nor compute")

    def compute(self, unit: RatedUnit) -> dict[str, S]:
        """The new standing of every player the unit changes; the book stays as it is.

        Default: every game checked (:meth:`SystemBase.check_game`), then the games that count
        (:meth:`SystemBase.counts`) applied one after another with :meth:`rate_game`, each
        from the standings the previous one left. Singles only: a system with doubles
        defines its own.
        """
        system, options = self.system, self.options
        for g in unit.games:
            system.check_game(options, g)
        work: dict[str, S] = {}
        for g in unit.games:
            if not system.counts(options, g):
                continue
            if len(g.side_a) != 1 or len(g.side_b) != 1:
                raise ValueError(f"{system.title} rates doubles with a compute of its own")
            a, b = g.side_a[0], g.side_b[0]
            sa, sb = work.get(a) or self.standing(a), work.get(b) or self.standing(b)
            na, nb = self.rate_game(g, sa, sb)
            day = g.played_on
            work[a] = replace(na, games=sa.games + 1, last_played=rules.later(sa.last_played, day))
            work[b] = replace(nb, games=sb.games + 1, last_played=rules.later(sb.last_played, day))
        return work

    def accept(self, new: Mapping[str, S], unit: RatedUnit) -> None:
        """Take what :meth:`compute` returned for ``unit`` once it is stored. Default: the new
        standings replace the old."""
        self.standings.update(new)

    def predict(self, game: Game) -> float:
        """The probability that side A wins ``game`` from the standings held now. Default, for
        singles: :meth:`SystemBase.expectation` of the two players' standings."""
        if len(game.side_a) != 1 or len(game.side_b) != 1:
            raise ValueError(f"{self.system.title} predicts no doubles game")
        return self.system.expectation(self.options, self.standing(game.side_a[0]),
                                       self.standing(game.side_b[0]), game.length)


class SystemBase(ABC, Generic[Opts, S]):
    """A rating system (:class:`server.api.RatingSystem`) with the lobby's defaults."""

    name: str
    """The name a configuration uses (``elo``)."""
    title: str
    """The name people read (``Elo``)."""
    live_matches = False
    """Players may play live matches on its ladders, each rated when it ends."""
    rates_each_result = False
    """An event's results are rated one by one as they are entered; otherwise an event is one
    unit, rated when it closes."""
    match_lengths = False
    """Its games are matches to a length (a scored result's winner reaches the length)."""
    doubles_allowed = False
    """Its ladders may be ``format = "doubles"``."""
    draws = False
    """A rated game may end level."""
    keys: frozenset[str] = frozenset()
    """Its own configuration keys (besides ``name``, ``system``, ``format``,
    ``inactivity_days``)."""
    standing_type: type[StandingBase] = StandingBase
    """The class :meth:`decode` makes: by default the standing class the system is declared
    with (``SystemBase[Options, Standing]``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "standing_type" in cls.__dict__:
            return
        for base in getattr(cls, "__orig_bases__", ()):
            args = get_args(base)
            if get_origin(base) is SystemBase and len(args) == 2 and isinstance(args[1], type):
                cls.standing_type = args[1]

    # --- the core ---------------------------------------------------------------------------

    @abstractmethod
    def read_options(self, table: Mapping[str, Any]) -> Opts:
        """Its own options from a ladder's configuration table (a :class:`LadderOptions`
        subclass; the common fields are filled in by :meth:`parse_options`). Raises
        ``ValueError`` naming the problem."""

    @abstractmethod
    def new_book(self, options: Opts) -> BookBase[Opts, S]:
        """An empty book of a ladder with these options."""

    @abstractmethod
    def expectation(self, options: Opts, a: S, b: S, length: int | None) -> float:
        """The probability that A beats B in a game (of ``length`` points where it matters)."""

    # --- the defaults -----------------------------------------------------------------------

    def option_keys(self) -> frozenset[str]:
        """:attr:`keys` and the keys every ladder takes."""
        return self.keys | rules.COMMON_KEYS

    def parse_options(self, table: Mapping[str, Any]) -> Opts:
        """A ladder's options from its whole configuration table: ``format`` (checked against
        :attr:`doubles_allowed`), :meth:`read_options`, ``inactivity_days``."""
        doubles = rules.parse_format(table, self.doubles_allowed, self.title)
        own = self.read_options(table)
        return replace(own, doubles=doubles, inactivity_days=rules.inactivity_days(table))

    def doubles(self, options: Opts) -> bool:
        return options.doubles

    def check_game(self, options: Opts, game: Game) -> None:
        """The sides of the ladder's format, no player twice, no negative score, a positive
        length; no rated draw unless :attr:`draws`."""
        doubles = self.doubles(options)
        rules.check_sides(game, 2 if doubles else 1, "doubles" if doubles else "singles")
        if not self.draws:
            rules.no_draws(game, self.name)

    def counts(self, options: Opts, game: Game) -> bool:
        """An unrated game does not count, nor an unlimited one when the system plays live
        matches or matches to a length (:func:`server.api.rules.counts`)."""
        return rules.counts(game, not (self.live_matches or self.match_lengths))

    def initial_rating(self, options: Opts) -> float | None:
        """A newcomer's rating (:meth:`BookBase.new_standing`'s)."""
        return self.new_book(options).new_standing("").rating

    def columns(self, options: Opts) -> Sequence[Column]:
        """Rating (two decimals) and games, each with a short ``help`` for people."""
        return (Column("rating", "Rating", "real", 2,
                       help="The player's rating on this ladder: the higher, the stronger."),
                Column("games", "Games", "integer", help="Rated games played on this ladder."))

    def row(self, options: Opts, standing: S, active: bool) -> dict[str, Any]:
        """``rating``, ``games``, ``active`` and the standing's own fields."""
        row: dict[str, Any] = {"rating": standing.rating, "games": standing.games,
                               "active": active}
        for name, _, _ in _own_fields(type(standing)):
            row[name] = getattr(standing, name)
        return row

    def is_active(self, options: Opts, standing: S, as_of: date | None) -> bool:
        """A rated game within the ladder's ``inactivity_days`` before ``as_of``."""
        return rules.is_active(options.inactivity_days, standing.last_played, as_of)

    def order(self, standing: S) -> float:
        """By rating, higher first."""
        return standing.rating

    def encode(self, standing: S) -> StoredStanding:
        """The common fields, and the standing's own in ``state`` (not the shared field, which
        is stored once per ladder)."""
        skip = shared_field(cast(RatingSystem, self))
        return StoredStanding(float(standing.rating), standing.games,
                              rules.iso(standing.last_played),
                              {name: getattr(standing, name)
                               for name, _, _ in _own_fields(type(standing)) if name != skip})

    def decode(self, options: Opts, player: str, stored: StoredStanding) -> S:
        """:meth:`encode` undone into :attr:`standing_type`; each own field is cast to its
        annotated type (JSON may turn 2.0 into 2), an absent one takes its default."""
        kind = self.standing_type
        cast_rating, fields_ = _codec(kind)
        state = stored.state
        own: dict[str, Any] = {}
        for name, to, default in fields_:
            value = state[name] if default is MISSING else state.get(name, default)
            own[name] = value if to is None or value is None else to(value)
        return cast(S, kind(player, cast_rating(stored.rating), stored.games,
                            rules.from_iso(stored.last_played), **own))


# --- the optional capabilities ------------------------------------------------------------


class FastReplay(Protocol):
    """A system whose ladders of single matches replay from plain log rows, bit for bit as its
    books would (``matchlobby replay``'s fast path, a correction's tail)."""

    def plain_replay(self, options: Any, ids: Mapping[str, int]) -> PlainReplay | None:
        """The replay of a ladder with these options (``ids``: player name to id), or ``None``
        when this ladder has none."""


class PlainPredictions(Protocol):
    """A :class:`FastReplay`'s plain replay that also predicts: ``matchlobby evaluate``'s
    fast path."""

    def predictions(self, log: Iterable[LogRow]) -> Iterator[float]:
        """Each row's probability that side A wins from the standings before it (what the
        book's ``predict`` says there), the row then applied as ``pairs`` applies it; the
        replay's standings carry over to the next call. Raises ``NotPlain`` as ``pairs``
        does."""


class TailCorrections(Protocol):
    """A system whose ladder a correction may replay from the corrected unit on, starting
    from the standings the stored history gives for that point."""

    def rewind(self, options: Any, standing: Any, rating_before: float,
               last_played: date | None, lengths: Sequence[int | None]) -> Any:
        """The standing before a tail of the log in which the player's rated games had these
        ``lengths``, given the rating history shows before the first of them and the last day
        they played before it. Raises ``ValueError`` when the tail is more than the standing
        holds."""


class LiveOutcomes(Protocol):
    """A system that says in closed form what a live match would change, without rating it
    twice through a book: a stake's fast path. The changes depend on nothing but the two
    standings, the length and the day (not on the time of day)."""

    def outcomes(self, options: Any, a: Any, b: Any, length: int, day: date
                 ) -> tuple[float, float, float, float]:
        """The rating changes a ``length``-point match of ``a`` (side A) against ``b`` played
        on ``day`` would make, exactly (bit for bit) what the book's ``compute`` gives: A's if
        A wins, A's if A loses, B's if B wins, B's if B loses. Asked only for a match the
        ladder rates."""


class HistoryLoading(Protocol):
    """A book that solves the whole history (ČAS's Peklo) and so loads it at start."""

    def load_history(self, games: Sequence[tuple[str, str, int, int]]) -> None:
        """Every rated game of the ladder's closed events, in order (see
        ``LogReader.event_games``)."""


class SharedField(Protocol):
    """A system with a standing field every unit may move for every player (ČAS's Peklo),
    stored as one value per ladder rather than in each player's row."""

    shared_field: str


def plain_replay(ladder: LadderConfig, ids: Mapping[str, int]) -> PlainReplay | None:
    """The ladder's :class:`FastReplay`, or ``None``."""
    make = getattr(ladder.system, "plain_replay", None)
    return None if make is None else cast(FastReplay, ladder.system).plain_replay(
        ladder.options, ids)


def plain_predictions(ladder: LadderConfig, ids: Mapping[str, int]) -> PlainPredictions | None:
    """The ladder's plain replay as :class:`PlainPredictions` when it has ``predictions``,
    else ``None``."""
    plain = plain_replay(ladder, ids)
    return (cast(PlainPredictions, plain) if callable(getattr(plain, "predictions", None))
            else None)


def tail_corrections(system: RatingSystem) -> TailCorrections | None:
    """The system as :class:`TailCorrections` when it has ``rewind``, else ``None``."""
    return cast(TailCorrections, system) if callable(getattr(system, "rewind", None)) else None


def live_outcomes(system: RatingSystem) -> LiveOutcomes | None:
    """The system as :class:`LiveOutcomes` when it has ``outcomes``, else ``None``."""
    return cast(LiveOutcomes, system) if callable(getattr(system, "outcomes", None)) else None


def history_loading(book: Book) -> HistoryLoading | None:
    """The book as :class:`HistoryLoading` when it has ``load_history``, else ``None``."""
    return cast(HistoryLoading, book) if callable(getattr(book, "load_history", None)) else None


def shared_field(system: RatingSystem) -> str | None:
    """The system's :class:`SharedField`, or ``None``."""
    field: str | None = getattr(system, "shared_field", None)
    return field
