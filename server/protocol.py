"""Frames to :class:`Request` objects and replies/pushes back to JSON. No I/O.

A frame is a JSON object (``{"id": 7, "cmd": "whois", "args": {"name": "alice"}}``)
or a plain command line (``whois alice``); both end as the same ``Request``
with validated, typed arguments.

Longer than the other modules (about 430 lines) on purpose: it is the whole wire contract in
one place (both frame forms, every argument kind and its limits, the reply, error and push
shapes), so that a change to what a client may send is made and reviewed where all of it is.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import orjson

from server.api.records import valid_name
from server.api.text import EVENT_NAME_MAX, REASON_MAX, TALK_MAX, clean_text
from server.cmdline import SplitError, split_words
from server.commands import Arg, CommandSpec, CommandTable

MAX_ID_LENGTH = 64
MAX_SAFE_INT = 2**53
MAX_SCORE = 1_000_000
MAX_LENGTH = 1000
MAX_TEXT = REASON_MAX
LADDER_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")
NOT_AN_OBJECT = "A JSON message must be an object with 'cmd' and optional 'id' and 'args'."

Id = int | str | None


class ProtocolError(Exception):
    """A request that cannot be carried out; ``code`` is one of the stable error words."""

    def __init__(self, code: str, message: str, id: Id = None, cmd: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id
        self.cmd = cmd


@dataclass(frozen=True, slots=True)
class Request:
    spec: CommandSpec
    args: dict[str, Any] = field(default_factory=dict)
    id: Id = None
    cmd: str = field(init=False, compare=False, repr=False)  # the spec's name, read often

    def __post_init__(self) -> None:
        object.__setattr__(self, "cmd", self.spec.name)


def bad(message: str) -> ProtocolError:
    return ProtocolError("bad_request", message)


def _text(value: Any, what: str, limit: int = MAX_TEXT) -> str:
    """Free text, by the one rule for it (:func:`server.api.text.clean_text`)."""
    if not isinstance(value, str):
        raise bad(f"{what} must be text.")
    try:
        return clean_text(value, what, limit)
    except ValueError as e:
        raise bad(f"{e}.") from None


def _int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise bad(f"{what} must be a whole number.")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise bad(f"{what} must be a whole number.")
        value = int(value)
    if isinstance(value, str):
        v = value.strip()
        if not (v.isascii() and v.isdigit()):
            if v.startswith("-") and v[1:].isascii() and v[1:].isdigit():
                raise bad(f"{what} cannot be negative: {value!r}.")
            raise bad(f"{what} must be a whole number, not {value[:40]!r}.")
        if len(v) > 16:
            raise bad(f"{what} is too large.")
        value = int(v)
    if not isinstance(value, int):
        raise bad(f"{what} must be a whole number.")
    if value < low:
        raise bad(f"{what} must be at least {low}." if low > 0 else f"{what} cannot be negative.")
    if value > high:
        raise bad(f"{what} must be at most {high}.")
    return value


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise bad(f"{what} must be text.")
    if not valid_name(value):
        raise bad(f"{what} {value[:40]!r} is not a valid name: use 1–20 of A-Z a-z 0-9 _ -.")
    return value


def convert(arg: Arg, value: Any) -> Any:
    """Validate and type one argument value."""
    what = arg.name.upper()
    kind = arg.kind
    if kind == "name":
        return _name(value, what)
    if kind == "side":
        text = _text(value, what, 41)
        names = text.split("+")
        if len(names) > 2:
            raise bad(f"{what} has more than two players: {text!r}.")
        side = tuple(_name(n, f"{what} player") for n in names)
        if len({n.casefold() for n in side}) != len(side):
            raise bad(f"{what} names the same player twice.")
        return side
    if kind == "ladder":
        if not isinstance(value, str) or not LADDER_RE.fullmatch(value):
            raise bad(f"{what} must be a ladder name such as 'backgammon'.")
        return value
    if kind == "password":
        if not isinstance(value, str) or not value:
            raise bad("PASSWORD must be non-empty text.")
        if len(value) > 128:
            raise bad("PASSWORD is longer than 128 characters.")
        return value
    if kind == "id":
        return _int(value, what, 1, MAX_SAFE_INT)
    if kind == "count":
        return _int(value, what, 0, 100_000)
    if kind == "score":
        return _int(value, what, 0, MAX_SCORE)
    if kind == "length":
        if isinstance(value, str) and value.strip().lower() == "unlimited":
            return "unlimited"
        return _int(value, what, 1, MAX_LENGTH)
    if kind == "date":
        if not isinstance(value, str):
            raise bad(f"{what} must be a date YYYY-MM-DD.")
        try:
            return date.fromisoformat(value).isoformat() if len(value) == 10 else _no_date(value)
        except ValueError:
            raise bad(f"{what} must be a date YYYY-MM-DD, not {value[:40]!r}.") from None
    if kind == "status":
        if value not in ("open", "closed"):
            raise bad(f"{what} must be 'open' or 'closed'.")
        return value
    if kind == "csv":
        if not isinstance(value, str) or not value.strip():
            raise bad("CSV must be the non-empty text of a results file.")
        return value
    if kind == "title":
        return _text(value, what, EVENT_NAME_MAX)
    if kind in ("reason", "text"):
        return _text(value, what)
    if kind == "message":
        return _text(value, what, TALK_MAX)
    raise AssertionError(f"unknown argument kind {kind}")


def _no_date(value: str) -> str:
    raise ValueError(value)


def _id(value: Any) -> Id:
    if value is None:
        return None
    if isinstance(value, bool):
        raise bad("The id must be a number or a short string.")
    if isinstance(value, int) and -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        return value
    if isinstance(value, str) and len(value) <= MAX_ID_LENGTH and not _lone_surrogate(value):
        if "\x00" in value:  # kept with a mutating request's reply: PostgreSQL text holds no NUL
            raise bad("The id must not contain a NUL character (U+0000).")
        return value
    raise bad("The id must be a number or a string of at most 64 characters.")


def _lone_surrogate(obj: Any) -> bool:
    """Whether a string in ``obj`` holds half a surrogate pair (a lone ``\\ud800`` escape).

    Such text has no UTF-8 form: it could be neither stored nor sent back.
    """
    stack = [obj]
    while stack:  # not recursive: the object may be nested as deep as the JSON parser allows
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode()
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def lookup(table: CommandTable, name: str) -> CommandSpec:
    spec = table.get(name)
    if spec is None:
        if name in table.groups:
            subs = table.subcommands(name)
            raise ProtocolError("unknown_command",
                                f"'{name}' needs a sub-command: {', '.join(subs)}.", cmd=name)
        shown = name if len(name) <= 40 else name[:40] + "…"
        raise ProtocolError("unknown_command", f"Unknown command {shown!r}; try 'help'.",
                            cmd=shown)
    return spec


@functools.cache
def _known_args(spec: CommandSpec) -> frozenset[str]:
    return frozenset(a.name for a in spec.args) | {f.name for f in spec.flags}


def bind(spec: CommandSpec, positional: list[Any], named: dict[str, Any]) -> dict[str, Any]:
    """Match arguments to the spec, check required ones and convert every value."""
    args: dict[str, Any] = {}
    if len(positional) > len(spec.args):
        raise ProtocolError("bad_request",
                            f"Too many arguments. Usage: {spec.usage}", cmd=spec.name)
    for arg, value in zip(spec.args, positional, strict=False):
        named.setdefault(arg.name, value)
    known = _known_args(spec)
    for key in named:
        if key not in known:
            raise ProtocolError("bad_request",
                                f"Unknown argument {key[:40]!r}. Usage: {spec.usage}", cmd=spec.name)
    for arg in spec.args:
        if arg.name in named and named[arg.name] is not None:
            args[arg.name] = convert(arg, named[arg.name])
        elif not arg.optional:
            raise ProtocolError("bad_request", f"Missing {arg.name.upper()}. Usage: {spec.usage}",
                                cmd=spec.name)
    for flag in spec.flags:
        value = named.get(flag.name)
        if flag.kind is None:
            if value not in (None, True, False):
                raise bad(f"--{flag.name} is a flag: true or false.")
            args[flag.name] = bool(value)
        elif value is not None:
            args[flag.name] = convert(Arg(flag.value or flag.name, flag.kind), value)
    return args


def _loads(text: str) -> Any:
    """orjson for speed; the standard library's reading of anything orjson refuses.

    They differ only on text orjson rejects outright (a lone surrogate escape,
    which the standard parser reads so that the id can still be answered), so
    every malformed frame gets the same reply either way.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text, parse_constant=_reject_constant)


def parse_json(text: str, table: CommandTable) -> Request:
    try:
        obj = _loads(text)
    except (ValueError, RecursionError) as e:
        raise bad(f"Malformed JSON: {str(e)[:100]}") from None
    if not isinstance(obj, dict):
        raise bad(NOT_AN_OBJECT)
    unknown = set(obj) - {"id", "cmd", "args"}
    req_id = _id(obj.get("id"))
    try:
        if "\\u" in text and _lone_surrogate(obj):
            raise bad("Text must be valid Unicode: a \\uD800-\\uDFFF escape must be half of a pair.")
        if unknown:
            raise bad(f"Unknown field(s) {sorted(unknown)[:5]}; a message has id, cmd and args.")
        cmd = obj.get("cmd")
        if not isinstance(cmd, str) or not cmd.strip():
            raise bad("'cmd' must be a command name such as \"whois\".")
        spec = lookup(table, " ".join(cmd.lower().split()))
        args = obj.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ProtocolError("bad_request", "'args' must be an object.", cmd=spec.name)
        try:
            return Request(spec, bind(spec, [], dict(args)), req_id)
        except ProtocolError as e:
            e.cmd = e.cmd or spec.name
            raise
    except ProtocolError as e:
        e.id = req_id
        raise


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_line(text: str, table: CommandTable) -> Request:
    said = _said(text, table)
    if said is not None:
        return said
    try:
        words = split_words(text)
    except SplitError as e:
        raise bad(str(e)) from None
    if not words:
        raise bad("Empty command; try 'help'.")
    name = words[0].lower()
    rest = words[1:]
    if name in table.groups and rest and f"{name} {rest[0].lower()}" in table:
        name = f"{name} {rest[0].lower()}"
        rest = rest[1:]
    spec = lookup(table, name)
    try:
        return _bind_line(spec, rest)
    except ProtocolError as e:
        e.cmd = e.cmd or spec.name
        raise


_LEAD_WORD = re.compile(r"[ \t]*([^ \t]+)")


def _said(text: str, table: CommandTable) -> Request | None:
    """A command whose last argument is a ``message`` (``tell bob don't wait``), its message
    the rest of the line as typed: quotes and backslashes are the player's, not quoting. The
    words before it (names) are split at spaces."""
    first = _LEAD_WORD.match(text)
    spec = table.get(first.group(1).lower()) if first is not None else None
    if spec is None or not spec.args or spec.args[-1].kind != "message":
        return None
    words: list[str] = []
    pos = first.end() if first is not None else 0
    for _ in spec.args[:-1]:
        m = _LEAD_WORD.match(text, pos)
        if m is None:
            break
        words.append(m.group(1))
        pos = m.end()
    message = text[pos:].strip(" \t")
    try:
        return Request(spec, bind(spec, [*words, *([message] if message else [])], {}))
    except ProtocolError as e:
        e.cmd = e.cmd or spec.name
        raise


def _bind_line(spec: CommandSpec, rest: list[str]) -> Request:
    positional: list[Any] = []
    named: dict[str, Any] = {}
    flags = {f.name: f for f in spec.flags}
    i = 0
    while i < len(rest):
        word = rest[i]
        if word.startswith("--") and len(word) > 2:
            key = word[2:]
            flag = flags.get(key)
            if flag is None:
                raise ProtocolError("bad_request", f"Unknown option {word[:40]!r}. Usage: {spec.usage}",
                                    cmd=spec.name)
            if flag.kind is None:
                named[key] = True
            else:
                if i + 1 >= len(rest):
                    raise ProtocolError("bad_request", f"{word} needs a value. Usage: {spec.usage}",
                                        cmd=spec.name)
                named[key] = rest[i + 1]
                i += 1
        else:
            positional.append(word)
        i += 1
    last = len(spec.args) - 1
    if spec.args and spec.args[-1].kind == "text" and len(positional) > last + 1:
        # a free-text last argument takes the rest of the line: `help report win`
        positional[last:] = [" ".join(positional[last:])]
    return Request(spec, bind(spec, positional, named))


def frame_id(text: str) -> Id:
    """The id of a JSON frame, when it can be read (for refusals before parsing proper)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(text)
        return _id(obj.get("id")) if isinstance(obj, dict) else None
    except (ValueError, RecursionError, ProtocolError):
        return None


# What a JSON value other than an object or an array may start with (after spaces).
_SCALAR_START = frozenset('"-0123456789tfn')


def _json_scalar(text: str) -> bool:
    """Whether the whole frame is one JSON string, number, ``true``, ``false`` or ``null``:
    a client that meant JSON, not a plain line (a plain line such as ``"whois" alice`` is no
    JSON value)."""
    stripped = text.strip()
    if stripped[:1] not in _SCALAR_START:
        return False
    try:
        orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return False
    return True


def parse_frame(text: str, table: CommandTable) -> Request:
    """Parse one text frame into a request of ``table``; raises :class:`ProtocolError`."""
    if text.lstrip()[:1] in ("{", "["):
        return parse_json(text, table)
    if _json_scalar(text):
        raise bad(NOT_AN_OBJECT)
    if "\x00" in text:
        raise bad("The command line contains a NUL character.")
    return parse_line(text.strip(), table)


class Push(dict[str, Any]):
    """A push, which may go to thousands of sessions: encoded once, on first use."""

    __slots__ = ("frame",)
    frame: bytes

    def encoded(self) -> bytes:
        try:
            return self.frame
        except AttributeError:
            self.frame = orjson.dumps(self)
            return self.frame


def encode(message: dict[str, Any]) -> str:
    """Compact JSON text (UTF-8, no ASCII escapes), as every frame is written."""
    return orjson.dumps(message).decode()


def encode_frame(message: dict[str, Any]) -> bytes:
    """A text frame's payload (UTF-8), as the transport writes it."""
    if isinstance(message, Push):
        return message.encoded()
    return orjson.dumps(message)


def reply(request: Request, data: Any) -> dict[str, Any]:
    return {"id": request.id, "ok": True, "cmd": request.cmd, "data": data}


def error(code: str, message: str, id: Id = None, cmd: str | None = None) -> dict[str, Any]:
    return {"id": id, "ok": False, "cmd": cmd, "error": {"code": code, "message": message}}


def push(event: str, data: Any) -> Push:
    return Push(event=event, data=data)


def help_text(table: CommandTable, command: str | None = None) -> dict[str, Any]:
    """The ``help`` reply: every command's usage, or one command's usage and who may use it;
    the first word of commands of two words (``help report``, ``help event``) lists them."""
    if command is None:
        return {"commands": [{"command": s.name, "usage": s.usage, "who": s.role,
                              "summary": s.summary} for s in table.values()]}
    name = " ".join(command.lower().split())
    if name not in table and name in table.groups:
        return {"commands": [{"command": s.name, "usage": s.usage, "who": s.role,
                              "summary": s.summary} for s in table.values()
                             if s.name.startswith(name + " ")]}
    spec = lookup(table, name)
    return {"command": spec.name, "usage": spec.usage, "who": spec.role, "summary": spec.summary}
