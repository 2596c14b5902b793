"""Commands: how the lobby's own commands and the ones plugins add are declared and run.

A command is a row (:class:`CommandSpec`): its name, who may run it, a summary
for ``help``, its arguments and flags. The parser, the help text and the role
check are all made from these rows, so a plugin's command is parsed, checked
and documented exactly like the lobby's own.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol, TypeVar

from server.api.publish import Publisher
from server.api.rating import LadderConfig
from server.api.storage import Reader, Store, Tx

T = TypeVar("T")

ANYONE = "anyone"
PLAYER = "player"
ADMIN = "admin"
ROLES = (ANYONE, PLAYER, ADMIN)

# Argument kinds the lobby's parser validates (server/protocol.py).
ARG_KINDS = frozenset({"name", "side", "ladder", "password", "id", "count", "score", "length",
                       "date", "status", "csv", "title", "reason", "text", "message"})


@dataclass(frozen=True, slots=True)
class Arg:
    """A positional argument; ``kind`` is one of :data:`ARG_KINDS` and selects its validation."""

    name: str
    kind: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Flag:
    """``--name`` alone (boolean) or ``--name VALUE`` when ``kind`` is set; ``value``: what
    the usage line and refusals call the value (default: the kind), as the help text does."""

    name: str
    kind: str | None = None
    value: str | None = None


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    role: str
    summary: str
    args: tuple[Arg, ...] = ()
    flags: tuple[Flag, ...] = ()
    read_only: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"command {self.name!r}: role must be one of {ROLES}")
        for a in self.args:
            if a.kind not in ARG_KINDS:
                raise ValueError(f"command {self.name!r}: unknown argument kind {a.kind!r}")

    @property
    def usage(self) -> str:
        parts = [self.name]
        for a in self.args:
            parts.append(f"[{a.name.upper()}]" if a.optional else a.name.upper())
        for f in self.flags:
            parts.append(f"[--{f.name}{' ' + (f.value or f.kind).upper() if f.kind else ''}]")
        return " ".join(parts)


class CommandError(Exception):
    """A refused command: a stable ``code`` (``bad_request``, ``not_found``, ``conflict``, …)
    and a sentence for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CommandContext(Protocol):
    """What a plugin's command handler gets from the lobby for one request."""

    @property
    def player(self) -> str | None:
        """The caller's name when logged in."""

    @property
    def ladders(self) -> Mapping[str, LadderConfig]: ...

    @property
    def reader(self) -> Reader:
        """Reads of what has been committed (every acknowledged write)."""

    @property
    def publish(self) -> Publisher:
        """Pushes, sent after the command's reply."""

    def ladder(self, name: str) -> LadderConfig:
        """The ladder called ``name``; raises ``not_found`` naming the command ``ladders``."""

    def player_name(self, name: str) -> str:
        """A player's name as registered (``name`` matched ignoring case); raises ``not_found``."""

    def player_id(self, name: str) -> int:
        """A registered player's id; raises ``not_found``."""

    def today(self) -> date: ...

    def charge(self, rows: int) -> None:
        """The command read ``rows`` rows that its reply does not hold (a count, a sort, an
        aggregate over them): the asker's read budget pays for them as for the rows of the
        reply. Only read-only commands are charged."""

    async def write(self, job: Callable[[Tx], Awaitable[T]]) -> T:
        """Run ``job`` in a write transaction; returns once it has committed. What the job
        returns is kept with its writes as the command's reply: a retry of the request (the same
        id) gets it back instead of running the command again, so return the reply's data."""


CommandHandler = Callable[[CommandContext, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class PluginCommand:
    """A command a plugin adds to the lobby: its row and the coroutine that answers it."""

    spec: CommandSpec
    run: CommandHandler


class CliEnvironment(Protocol):
    """What a plugin's ``matchlobby`` sub-command gets: the configuration and the database."""

    @property
    def database(self) -> str: ...

    @property
    def ladders(self) -> Sequence[LadderConfig]: ...

    async def open(self) -> Store:
        """The database, migrated to the code's schema; close it when done."""


@dataclass(frozen=True)
class CliCommand:
    """A ``matchlobby`` sub-command a plugin adds (``rate``, ``replay``).

    ``configure`` adds its arguments to its parser; ``run`` returns the exit
    status. ``needs_config`` is false for commands that touch no database: they get no
    ``--config``/``--db`` options, and the lobby's configuration only if they add a
    ``--config`` of their own (read and checked as for every command).
    """

    name: str
    help: str
    description: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, CliEnvironment], int]
    needs_config: bool = True


def names(commands: Iterable[PluginCommand]) -> list[str]:
    return [c.spec.name for c in commands]
