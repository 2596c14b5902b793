"""Fuzzing a running server with hypothesis: random and mutated frames of every shape.

Every frame (bad JSON, wrong types, huge numbers, NaN, deep nesting, odd Unicode,
escaped surrogates, plain lines that break shell quoting, binary frames, every command
with every argument shape) must get exactly one reply or, when over the size limit,
``too_large`` and a close with 1009. No reply is ever ``internal``, the server logs no
error, the connection stays usable after every frame within the limit, and a batch of
frames that were all refused leaves the database exactly as it was.

One server (real SQLite file, port 0) serves the whole module; its rate limits are
raised so the fuzzer is not throttled. The examples are derandomized, so a run is
reproducible; the figures are reported in the summary after the results.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shlex
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from testkit import sizes
from testkit.constants import ADMIN, ADMIN_PASSWORD, ERROR_CODES, PASSWORD, PLAY_FREELY
from testkit.db import dump_db, sql
from testkit.figures import group
from testkit.logs import Capture, captured_logs
from testkit.server_thread import ServerThread
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from server.commands import CommandSpec
from server.config import Limits, default_ladders
from server.plugins import command_table

COMMANDS = command_table()  # the lobby's own commands and its plugins'

LIMIT = 64 * 1024
HARD_LIMIT = 16 * LIMIT  # beyond it websockets itself closes with 1009 (server/net/transport.py)
REPLY_TIMEOUT = 10.0  # no reply within this is a hang, not slowness
FUZZ_LIMITS = Limits(messages_per_second=1e6, burst=1_000_000, strikes=1_000_000,
                     login_free_failures=1_000_000_000, login_address_failures=1_000_000_000,
                     login_account_failures=1_000_000_000, connections_per_address=1000,
                     read_units_per_second=0, **PLAY_FREELY)
# Besides the read-only ones, the commands that write nothing to the database even when
# they succeed: a batch in which no other command succeeded must leave it untouched.
IN_MEMORY = frozenset({"watch", "unwatch", "invite", "uninvite", "decline"})
PLAYERS = ["alice", "bob", "carol", "dave"]
NAMES = [*PLAYERS, ADMIN, "Alice", "BOB", "nobody", "eve"]
LADDERS = [x.name for x in default_ladders()] + ["chess", "Backgammon"]



# The examples are the same on every run (derandomized); HARDENING_SEED=<int> explores others,
# HARDENING_SCALE=<factor> runs that share of the full counts (0.5 unless set, CI 1: testkit.sizes).
# Shrinking is off so that a failing run stays bounded in time: the failing frame is shown as is.
SEED = os.environ.get("HARDENING_SEED")
FIGURES: Counter[str] = group(f"fuzzing figures (seed: {SEED or 'derandomized'})", Counter())
# frames that reached each command (parsed as it)
PER_COMMAND: Counter[str] = group("fuzzing: frames per command", Counter())


def fuzz_settings(examples: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    chosen = settings(max_examples=sizes.examples(examples), deadline=None,
                      derandomize=SEED is None, database=None, print_blob=True,
                      phases=[Phase.explicit, Phase.generate],
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                             HealthCheck.large_base_example,
                                             HealthCheck.function_scoped_fixture])

    def apply(test: Callable[..., None]) -> Callable[..., None]:
        test = chosen(test)
        return test if SEED is None else seed(int(SEED))(test)
    return apply


# ---- a JSON writer that can also emit what json.dumps cannot -------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text spliced in as is: NaN literals, 5000-digit numbers, 20000-deep nesting,
    lone surrogate escapes."""

    text: str
    deep: bool = False


def dump(value: Any, ascii_only: bool) -> str:
    if isinstance(value, Raw):
        return value.text
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ascii_only)
    if isinstance(value, list):
        return "[" + ",".join(dump(v, ascii_only) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=ascii_only)}:{dump(v, ascii_only)}"
                              for k, v in value.items()) + "}"
    raise TypeError(value)


def is_deep(value: Any) -> bool:
    if isinstance(value, Raw):
        return value.deep
    if isinstance(value, list):
        return any(is_deep(v) for v in value)
    if isinstance(value, dict):
        return any(is_deep(v) for v in value.values())
    return False


# ---- values of every shape -----------------------------------------------------------------

ODD_STRINGS = st.sampled_from([
    "", " ", "\x00", "\t", "\n", "\r\n", "\x1b[31m", "\u2028", "\u202e", "\ufeff", "\u200b", "é", "ß",
    "İ", "ﬀ", "Ａｌｉｃｅ", "😀", "a" * 201, "x" * 5000, "\x00admin", "root\x00", "alice ", " alice",
    "ALICE", "backgammon\n", "../../etc/passwd", "'; DROP TABLE players; --", "%s%s%n", "{{}}",
    "unlimited", "UNLIMITED", "-1", "0", "1.0", "1e3", "0x10", "٣", "¹", "+1", "  7  ", "NaN",
    "Infinity", "null", "true", "2026-02-30", "2026-1-1", "20260101", "open ", "alice+alice",
    "alice+bob+carol", "+", "alice+", "event", "event close", "help", "-", "--all", "\"", "'",
])
SURROGATES = st.sampled_from(['"\\ud800"', '"a\\udfffb"', '"\\ud83d"', '"\\ude00\\ud83d"',
                              '"\\uDBFF"', '"\\ud83d\\ude00"']).map(Raw)
BIG_NUMBERS = st.sampled_from(["9" * 400, "9" * 5000, "-" + "9" * 30, "1e400", "-1e400", "1e-400",
                               "-0", "0.0", "1.0", "2.5", "1E2", "1e5", "9007199254740993",
                               "123456789012345678901234567890"]).map(Raw)
EDGE_INTS = st.sampled_from([0, -1, 1, 2, 2**31, 2**53, 2**53 + 1, -(2**53), -(2**53) - 1, 2**63,
                             2**64, 10**6, 10**6 + 1, 999, 1000, 1001, 100_000, 100_001])
NESTED = st.one_of(
    st.sampled_from([2, 100, 998, 1000, 1001, 3000, 20_000]).map(
        lambda n: Raw("[" * n + "]" * n, deep=n > 500)),
    st.sampled_from([100, 999, 1000, 1001, 5000]).map(
        lambda n: Raw('{"a":' * n + "0" + "}" * n, deep=n > 500)),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), EDGE_INTS,
    st.floats(allow_nan=True, allow_infinity=True), ODD_STRINGS, st.text(max_size=30),
    SURROGATES, BIG_NUMBERS,
)
WRONG = st.one_of(
    SCALARS, NESTED,
    st.lists(SCALARS, max_size=4),
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=3),
)


NAME = st.one_of(st.sampled_from(NAMES), st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True))


def cells(*good: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    junk = st.one_of(st.sampled_from(["", "-3", "99999999999999999999", "1" * 30, "1000001", "1e5", "NaN",
                                      "١", '"a,b"', '"', "unlimited", "no:", "yes", "2026-02-30",
                                      "alice+alice", "a+b+c", "x" * 25]),
                     st.text(max_size=8))
    return st.one_of(*good, junk).map(str)


CSV_ROW = st.tuples(
    cells(st.sampled_from(["Open", "open", "Cup"])),
    cells(st.dates().map(lambda d: d.isoformat())),
    cells(NAME, st.tuples(NAME, NAME).map("+".join)),
    cells(NAME, st.tuples(NAME, NAME).map("+".join)),
    cells(st.integers(0, 20), st.integers(0, 10**7), st.integers(0, 10**40)),
    cells(st.integers(0, 20), st.integers(0, 10**7), st.integers(0, 10**40)),
    cells(st.just(""), st.integers(1, 20), st.integers(1, 10**25), st.just("unlimited")),
    cells(st.just(""), st.just("no:forfeit")),
).map(",".join)


CLEAN_ROW = st.tuples(  # every cell well-formed; the numbers may still be absurd
    st.just("Open"), st.dates().map(lambda d: d.isoformat()),
    st.sampled_from(PLAYERS), st.sampled_from(["eve", "frank"]),
    *[st.one_of(st.integers(0, 20), st.integers(2**63, 10**40)).map(str)] * 2,
    st.one_of(st.just(""), st.integers(1, 10**25).map(str), st.just("unlimited")),
    st.sampled_from(["", "no:forfeit"]),
).map(",".join)


HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"


def csv_text() -> st.SearchStrategy[str]:
    """Results files: well-formed rows (maybe absurd numbers), or junk in any cell or header."""
    clean = st.lists(CLEAN_ROW, min_size=1, max_size=4).map(lambda rows: "\n".join([HEADER, *rows]) + "\n")
    header = st.sampled_from([HEADER, "event,date,side_a,side_b,score_a,score_b",
                              "event,date,side_a", "\ufeff" + HEADER, "event," + HEADER])
    rows = st.lists(st.one_of(CLEAN_ROW, CSV_ROW), max_size=6)
    messy = st.tuples(header, rows, st.sampled_from(["\n", "\r\n", "\r"])).map(
        lambda t: t[2].join([t[0], *t[1]]) + t[2])
    return st.one_of(clean, messy)


RIGHT: dict[str, st.SearchStrategy[Any]] = {
    "name": NAME,
    "side": st.one_of(NAME, st.tuples(NAME, NAME).map("+".join)),
    "ladder": st.sampled_from(LADDERS),
    "password": st.one_of(st.sampled_from([PASSWORD, "abcd", "abc", "a" * 128, "a" * 129]),
                          st.text(min_size=1, max_size=40)),
    "id": st.one_of(st.integers(1, 6), st.integers(1, 2**53), st.integers(1, 6).map(str)),
    "count": st.one_of(st.integers(0, 100_000), st.integers(0, 100).map(str)),
    "score": st.one_of(st.integers(0, 10**6), st.integers(0, 20).map(str)),
    "length": st.one_of(st.integers(1, 1000), st.just("unlimited")),
    "date": st.dates().map(lambda d: d.isoformat()),
    "status": st.sampled_from(["open", "closed"]),
    "csv": csv_text(),
    "title": st.text(min_size=1, max_size=60),
    "reason": st.text(min_size=1, max_size=60),
    "text": st.one_of(st.sampled_from(list(COMMANDS)), st.text(min_size=1, max_size=40)),
    "message": st.one_of(st.just("gl, don't \"wait\" \\o/"), st.text(min_size=1, max_size=60)),
}


def value(kind: str | None) -> st.SearchStrategy[Any]:
    """A right value for ``kind`` about half the time, anything at all otherwise."""
    if kind is None:  # a boolean flag
        return st.one_of(st.booleans(), WRONG)
    return st.one_of(RIGHT[kind], WRONG)


def test_every_argument_kind_has_values() -> None:
    kinds = {a.kind for s in COMMANDS.values() for a in s.args}
    kinds |= {f.kind for s in COMMANDS.values() for f in s.flags if f.kind}
    assert kinds <= set(RIGHT), f"give the fuzzer values for {kinds - set(RIGHT)}"


@st.composite
def args_for(draw: st.DrawFn, spec: CommandSpec) -> dict[str, Any]:
    """All arguments of the right kind, or exactly one wrong, or anything at all."""
    mode = draw(st.sampled_from(["right", "one wrong", "any"]))
    wrong = draw(st.integers(0, max(len(spec.args) - 1, 0)))
    args: dict[str, Any] = {}
    for i, a in enumerate(spec.args):
        if mode == "any" and draw(st.integers(0, 5)) == 0:
            continue  # now and then an argument is missing
        if mode == "any" or (mode == "one wrong" and i == wrong):
            args[a.name] = draw(value(a.kind))
        elif not a.optional or draw(st.booleans()):
            args[a.name] = draw(RIGHT[a.kind])
    for f in spec.flags:
        if draw(st.booleans()):
            right = RIGHT[f.kind] if f.kind else st.booleans()
            args[f.name] = draw(value(f.kind) if mode == "any" else right)
    if draw(st.integers(0, 7)) == 0:
        args[draw(st.one_of(st.text(max_size=10), st.sampled_from(["all", "unrated", "id", "cmd"])))] \
            = draw(SCALARS)
    return args


COMMAND_NAMES = st.one_of(
    st.sampled_from(list(COMMANDS)),
    st.sampled_from(list(COMMANDS)).map(str.upper),
    st.sampled_from(list(COMMANDS)).map(lambda n: f"  {n.replace(' ', chr(9) + ' ')} "),
    st.sampled_from(["event", "report", "events show", "event  close", "who\x00", "WHO IS", "", " ",
                     "x" * 300, "help me", "__init__", "HANDLERS"]),
    st.text(max_size=20),
)
VALID_IDS = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=64))
IDS = st.one_of(VALID_IDS, VALID_IDS, WRONG, st.text(min_size=65, max_size=80))


def valid_id(v: Any) -> bool:
    """Would the server take this (parsed) value as a request id, and so echo it?"""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return -(2**53) <= v <= 2**53
    return isinstance(v, str) and len(v) <= 64 and encodable(v) and "\x00" not in v


def encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


ANY_ID = object()  # the reply's id is not predictable (the frame may not even parse)


@dataclass(frozen=True)
class Frame:
    data: str | bytes
    kind: str
    expect_id: Any = ANY_ID
    cmd: str | None = None  # the command it addresses, when it names one

    @property
    def size(self) -> int:
        return len(self.data) if isinstance(self.data, bytes) else len(self.data.encode())

    def __repr__(self) -> str:
        shown = self.data if len(self.data) < 300 else self.data[:300]
        return f"Frame({self.kind}, {shown!r}{'…' if len(self.data) >= 300 else ''})"


def addresses(name: str) -> bool:
    return " ".join(name.lower().split()) in COMMANDS


@st.composite
def json_frames(draw: st.DrawFn) -> Frame:
    name = draw(COMMAND_NAMES)
    spec = COMMANDS.get(" ".join(name.lower().split())) or draw(st.sampled_from(list(COMMANDS.values())))
    obj: dict[str, Any] = {}
    if draw(st.integers(0, 9)) > 0:
        obj["cmd"] = name if draw(st.integers(0, 9)) > 0 else draw(WRONG)
    if draw(st.booleans()):
        obj["id"] = draw(IDS)
    shape = draw(st.integers(0, 9))
    if shape <= 6:
        obj["args"] = draw(args_for(spec))
    elif shape == 7:
        obj["args"] = draw(WRONG)
    if draw(st.integers(0, 11)) == 0:
        obj[draw(st.text(max_size=8))] = draw(SCALARS)
    top: Any = obj if draw(st.integers(0, 11)) > 0 else draw(WRONG)
    text = dump(top, ascii_only=draw(st.booleans()))
    named = spec.name if top is obj and obj.get("cmd") == name and addresses(name) else None
    return Frame(text, "json", ANY_ID if is_deep(top) else expected_id(text), named)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def expected_id(text: str) -> Any:
    """The id a reply to this JSON text must carry: the request's when it parses and is valid."""
    try:
        obj = json.loads(text, parse_constant=_no_constant)  # the server refuses NaN and Infinity
    except ValueError:
        return None
    return obj["id"] if isinstance(obj, dict) and "id" in obj and valid_id(obj["id"]) else None


@st.composite
def request_frames(draw: st.DrawFn, only: str | None = None) -> Frame:
    """A request as a client would write it, its arguments right, or one of them wrong."""
    spec = COMMANDS[only] if only else draw(st.sampled_from(list(COMMANDS.values())))
    obj: dict[str, Any] = {"cmd": spec.name, "args": draw(args_for(spec))}
    if draw(st.booleans()):
        obj["id"] = draw(VALID_IDS)
    text = dump(obj, ascii_only=draw(st.booleans()))
    return Frame(text, "request", ANY_ID if is_deep(obj) else expected_id(text), spec.name)


@st.composite
def line_frames(draw: st.DrawFn, only: str | None = None) -> Frame:
    name = only or draw(COMMAND_NAMES)
    spec = COMMANDS.get(" ".join(name.lower().split())) or draw(st.sampled_from(list(COMMANDS.values())))
    words: list[str] = [name]
    for a in spec.args:
        if draw(st.integers(0, 5)) > 0:
            v = draw(st.one_of(RIGHT[a.kind], ODD_STRINGS, st.text(max_size=12)))
            words.append(str(v))
    for f in spec.flags:
        if draw(st.booleans()):
            words.append(f"--{f.name}")
            if f.kind:
                words.append(str(draw(st.one_of(RIGHT[f.kind], ODD_STRINGS))))  # --range 50
    words += draw(st.lists(st.sampled_from(["--", "--x", "-", '"', "'", "\\", '"unterminated', "it's",
                                            "--all", "--unrated", "\x00", "a\\", "'\"'", "{", "["]),
                           max_size=2))
    quoted = []
    for w in words:
        how = draw(st.integers(0, 4))
        quoted.append(shlex.quote(w) if how == 0 else f'"{w}' if how == 1 else w)
    sep = draw(st.sampled_from([" ", "  ", "\t", " \u3000 "]))
    line = sep.join(quoted)
    if draw(st.integers(0, 9)) == 0:
        line = draw(st.sampled_from(["{", "[", " ", "\n"])) + line
    plain = not line.lstrip().startswith(("{", "["))
    return Frame(line, "line", None if plain else ANY_ID, spec.name if plain and addresses(name) else None)


MUTATIONS = st.lists(st.tuples(st.sampled_from(["flip", "delete", "insert", "truncate", "repeat"]),
                               st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=4)


@st.composite
def mutated_frames(draw: st.DrawFn) -> Frame:
    """A valid request, then bytes flipped, dropped, inserted, repeated or cut off."""
    spec = draw(st.sampled_from(list(COMMANDS.values())))
    args = {a.name: draw(RIGHT[a.kind]) for a in spec.args}
    obj = {"id": draw(st.integers(1, 10**6)), "cmd": spec.name, "args": args}
    data = bytearray(json.dumps(obj, ensure_ascii=draw(st.booleans())).encode())
    for op, where, byte in draw(MUTATIONS):
        i = min(int(where * len(data)), max(len(data) - 1, 0))
        if not data:
            break
        if op == "flip":
            data[i] ^= 1 << (byte % 8)
        elif op == "delete":
            del data[i]
        elif op == "insert":
            data.insert(i, byte)
        elif op == "truncate":
            del data[i:]
        else:
            data[i:i] = data[i:i + 1 + byte % 8]
    return Frame(bytes(data).decode("utf-8", "replace"), "mutated")


def binary_frames() -> st.SearchStrategy[Frame]:
    payload = st.one_of(st.binary(max_size=300),
                        st.sampled_from([b"who", b'{"cmd": "who"}', b"\xff\xfe\x00", b""]))
    return payload.map(lambda b: Frame(b, "binary", None))


ANY_FRAME = st.one_of(request_frames(), json_frames(), line_frames(), mutated_frames(), binary_frames())


# ---- the server and the conversation -------------------------------------------------------


@dataclass
class Fuzzed:
    server: ServerThread
    logs: Capture


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, template_db: Path) -> Iterator[Fuzzed]:
    db = tmp_path_factory.mktemp("fuzz") / "lobby.db"
    db.write_bytes(template_db.read_bytes())
    server = ServerThread(db, FUZZ_LIMITS, drop_timeout=0.0).start()
    with captured_logs(logging.WARNING) as logs:
        try:
            setup_state(server)
            yield Fuzzed(server, logs)
        finally:
            server.stop()


class Conn:
    """A synchronous WebSocket client: each frame, then its one reply."""

    def __init__(self, url: str) -> None:
        self._stack = contextlib.ExitStack()
        self.ws: ClientConnection = self._stack.enter_context(
            connect(url, max_size=None, open_timeout=10, close_timeout=2))
        assert json.loads(self.ws.recv(REPLY_TIMEOUT))["event"] == "hello"
        self.probes = 0

    def reply(self) -> dict[str, Any]:
        """The next reply (pushes are skipped); a close or a silence raises."""
        while True:
            msg = json.loads(self.ws.recv(REPLY_TIMEOUT))
            assert isinstance(msg, dict), msg
            if "event" not in msg:
                return msg

    def call(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps(frame))
        return self.reply()

    def probe(self) -> None:
        """Still usable, and nothing more was said about the previous frame."""
        self.probes += 1
        rid = f"probe-{self.probes}"
        reply = self.call({"id": rid, "cmd": "ladders"})
        assert reply["id"] == rid and reply["ok"] is True, ("an extra or missing reply", reply)

    def close(self) -> None:
        self._stack.close()


def setup_state(server: ServerThread) -> None:
    """Players, a finished match, a claimed one and open events, for ids to hit."""
    conns = {n: Conn(server.url) for n in PLAYERS}
    for n, c in conns.items():
        assert c.call({"cmd": "register", "args": {"name": n, "password": PASSWORD}})["ok"]
    admin = Conn(server.url)
    assert admin.call({"cmd": "login", "args": {"name": ADMIN, "password": ADMIN_PASSWORD}})["ok"]
    a, b, c, d = (conns[n] for n in PLAYERS)
    for x, y, xn, yn in ((a, b, "alice", "bob"), (c, d, "carol", "dave")):
        assert x.call({"cmd": "invite", "args": {"name": yn, "ladder": "backgammon", "length": 3}})["ok"]
        assert y.call({"cmd": "join", "args": {"name": xn}})["ok"]
    assert b.call({"cmd": "resign"})["ok"]  # match 1 finished, alice won
    assert c.call({"cmd": "report win", "args": {"score_a": 3, "score_b": 1}})["ok"]  # match 2 claimed
    # one name for all three, so that a results file's rows may belong to any of them
    for name, ladder in (("Open", "scrabble"), ("Open", "foosball-singles"), ("Open", "backgammon")):
        assert admin.call({"cmd": "event create", "args": {"name": name, "ladder": ladder}})["ok"]
    for conn in (*conns.values(), admin):
        conn.close()


def lift_bans(server: ServerThread) -> None:
    """An admin's frames may have banned the players the other batches log in as: lifted."""
    admin = Conn(server.url)
    try:
        login_as(admin, "admin")
        for name in PLAYERS:
            assert admin.call({"cmd": "unban", "args": {"name": name}})["ok"]
    finally:
        admin.close()


def login_as(conn: Conn, role: str) -> None:
    if role == "guest":
        return
    name, password = (ADMIN, ADMIN_PASSWORD) if role == "admin" else ("alice", PASSWORD)
    reply = conn.call({"cmd": "login", "args": {"name": name, "password": password}})
    assert reply["ok"] is True, reply


def check_reply(frame: Frame, reply: dict[str, Any]) -> None:
    assert set(reply) >= {"id", "ok", "cmd"}, reply
    if frame.expect_id is not ANY_ID:
        assert reply["id"] == frame.expect_id, ("the id is not echoed", reply)
    if reply["ok"] is True:
        assert reply["cmd"] in COMMANDS and "data" in reply, reply
        return
    assert reply["ok"] is False, reply
    code, message = reply["error"]["code"], reply["error"]["message"]
    assert code in ERROR_CODES - {"internal", "too_large"}, reply
    assert isinstance(message, str) and message, reply
    if frame.kind == "binary":
        assert code == "bad_request" and "Binary" in message, reply


def expect_too_large(conn: Conn, reply: dict[str, Any]) -> None:
    """``too_large`` (with no id: the frame was not read), then nothing but a close with 1009."""
    assert reply["ok"] is False and reply["error"]["code"] == "too_large" and reply["id"] is None, reply
    with pytest.raises(ConnectionClosed):
        conn.reply()
    assert conn.ws.close_code == 1009, (conn.ws.close_code, conn.ws.close_reason)


def writes(reply: dict[str, Any]) -> bool:
    """Did this reply accept a command that may have written to the database?"""
    if not reply.get("ok"):
        return False
    spec = COMMANDS[reply["cmd"]]
    return not spec.read_only and spec.name not in IN_MEMORY


def run_batch(fuzzed: Fuzzed, role: str, frames: list[Frame]) -> None:
    server = fuzzed.server
    errors = len(fuzzed.logs.errors())
    conn = Conn(server.url)
    try:
        login_as(conn, role)
        before = dump_db(server.db)
        wrote = False
        for frame in frames:
            try:
                conn.ws.send(frame.data)
                reply = conn.reply()
            except (ConnectionClosed, TimeoutError) as e:
                raise AssertionError(f"no reply to {frame!r}: {e!r}") from None
            if frame.size > LIMIT:  # a generated frame can be over the limit too
                expect_too_large(conn, reply)
                FIGURES["frames"] += 1
                FIGURES["oversize: too_large then 1009"] += 1
                conn.close()
                if not wrote:
                    assert dump_db(server.db) == before, f"refused frames changed the database: {frames!r}"
                conn = Conn(server.url)
                login_as(conn, role)
                before, wrote = dump_db(server.db), False
                continue
            check_reply(frame, reply)
            assert len(fuzzed.logs.errors()) == errors, (frame, fuzzed.logs.errors()[errors:])
            wrote |= writes(reply)
            FIGURES["frames"] += 1
            FIGURES[f"frames: {frame.kind}"] += 1
            FIGURES["accepted" if reply["ok"] else "refused"] += 1
            if frame.cmd is not None:
                PER_COMMAND[frame.cmd] += 1
            conn.probe()
        if wrote:
            FIGURES["batches that wrote (not compared)"] += 1
        else:
            assert dump_db(server.db) == before, f"refused frames changed the database: {frames!r}"
            FIGURES["batches: database unchanged"] += 1
    finally:
        conn.close()
    if role == "admin" and sql(server.db, "SELECT count(*) FROM bans")[0][0]:
        lift_bans(server)


# ---- the properties ------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["guest", "player", "admin"])
@fuzz_settings(examples=170)
@given(frames=st.lists(ANY_FRAME, min_size=4, max_size=16))
def test_every_frame_gets_one_good_reply(fuzzed: Fuzzed, role: str, frames: list[Frame]) -> None:
    run_batch(fuzzed, role, frames)


@pytest.mark.parametrize("name", list(COMMANDS))
@fuzz_settings(examples=10)
@given(role=st.sampled_from(["guest", "player", "admin"]), data=st.data())
def test_each_command_with_every_argument_shape(fuzzed: Fuzzed, name: str, role: str,
                                                data: st.DataObject) -> None:
    frames = data.draw(st.lists(st.one_of(request_frames(name), line_frames(name)), min_size=3,
                                max_size=8))
    run_batch(fuzzed, role, frames)


@fuzz_settings(examples=80)
@given(frames=st.lists(st.one_of(line_frames(), mutated_frames()), min_size=4, max_size=16))
def test_plain_lines_and_mutations_as_a_player(fuzzed: Fuzzed, frames: list[Frame]) -> None:
    run_batch(fuzzed, "player", frames)


@st.composite
def results_frames(draw: st.DrawFn, events: list[int]) -> Frame:
    """The admin's richest input: a results file, or one result, for an open event."""
    event = draw(st.sampled_from(events) if draw(st.integers(0, 7)) else st.integers(1, 10**6))
    if draw(st.booleans()):
        cmd, args = "event import", {"csv": draw(csv_text())}
    else:
        cmd, args = "event result", draw(args_for(COMMANDS["event result"]))
    obj = {"cmd": cmd, "args": {**args, "event": event}}
    return Frame(dump(obj, ascii_only=False), "results", None, cmd)


@fuzz_settings(examples=60)
@given(data=st.data())
def test_results_as_the_admin(fuzzed: Fuzzed, data: st.DataObject) -> None:
    # three events open for this example alone (the other tests close events as they go)
    admin = Conn(fuzzed.server.url)
    login_as(admin, "admin")
    events = [admin.call({"cmd": "event create", "args": {"name": "Open", "ladder": ladder}})["data"]["id"]
              for ladder in ("scrabble", "foosball-singles", "backgammon")]
    admin.close()
    run_batch(fuzzed, "admin", data.draw(st.lists(results_frames(events), min_size=1, max_size=6)))


OVERSIZE_KINDS = st.sampled_from(["ascii", "wide", "json", "binary"])


@fuzz_settings(examples=30)
@given(kind=OVERSIZE_KINDS, size=st.one_of(st.integers(LIMIT - 2, LIMIT + 2),
                                          st.integers(LIMIT + 1, 3 * LIMIT),
                                          st.integers(HARD_LIMIT + 1, HARD_LIMIT + 1000)))
def test_oversized_frames_are_refused_then_closed(fuzzed: Fuzzed, kind: str, size: int) -> None:
    """Over 64 KiB (in bytes): ``too_large`` and close 1009; at the limit: an ordinary reply."""
    if kind == "binary":
        data: str | bytes = b"\x00" * size
    elif kind == "ascii":
        data = "help " + "x" * (size - 5)
    elif kind == "wide":  # two bytes a character: few characters, many bytes
        data = "help " + "é" * ((size - 5) // 2) + "x" * ((size - 5) % 2)
    else:
        head = '{"id": 5, "cmd": "event import", "args": {"event": 1, "csv": "'
        data = head + "a" * (size - len(head) - 3) + '"}}'
    nbytes = len(data) if isinstance(data, bytes) else len(data.encode())
    assert nbytes == size
    before = dump_db(fuzzed.server.db)
    errors = len(fuzzed.logs.errors())
    conn = Conn(fuzzed.server.url)
    FIGURES["frames"] += 1
    try:
        try:
            conn.ws.send(data)
        except ConnectionClosed:
            assert size > HARD_LIMIT, "closed while the frame was being sent"
        if size <= LIMIT:
            reply = conn.reply()
            assert reply["ok"] is False and reply["error"]["code"] in ("bad_request", "not_logged_in"), reply
            conn.probe()
            FIGURES["oversize: at the limit, answered"] += 1
            return
        try:
            reply = conn.reply()
        except ConnectionClosed:
            # beyond 16× the limit websockets closes by itself, before the frame is read
            assert size > HARD_LIMIT, "closed without a too_large reply"
            assert conn.ws.close_code == 1009, (conn.ws.close_code, conn.ws.close_reason)
            FIGURES["oversize: closed 1009 by websockets"] += 1
        else:
            expect_too_large(conn, reply)
            FIGURES["oversize: too_large then 1009"] += 1
    finally:
        conn.close()
    assert dump_db(fuzzed.server.db) == before
    assert fuzzed.logs.errors()[errors:] == []


NOT_UTF8 = [
    b"\xff\xfe who",                  # bytes that never occur in UTF-8
    b"login alice \xc3",               # a sequence cut short at the end
    b'{"cmd": "\xed\xa0\x80"}',         # an encoded surrogate
    b"whois \xc0\xaf",                 # an overlong encoding of "/"
    b"whois \xf4\x90\x80\x80",          # beyond U+10FFFF
    b'{"id": 3, "cmd": "whois", "args": {"name": "\xe9"}}',  # Latin-1, not UTF-8
]


def check_not_utf8(fuzzed: Fuzzed, data: bytes | list[bytes]) -> None:
    """A text frame (or a fragmented text message) that is not UTF-8: ``bad_request`` saying so,
    and the connection stays open and usable; nothing written, nothing logged."""
    before = dump_db(fuzzed.server.db)
    errors = len(fuzzed.logs.errors())
    conn = Conn(fuzzed.server.url)
    try:
        conn.ws.send(data, text=True)
        reply = conn.reply()
        assert reply["ok"] is False and reply["error"]["code"] == "bad_request", reply
        assert "UTF-8" in reply["error"]["message"], reply
        conn.probe()
        assert conn.ws.close_code is None
    finally:
        conn.close()
    assert dump_db(fuzzed.server.db) == before
    assert fuzzed.logs.errors()[errors:] == []
    FIGURES["frames"] += 1
    FIGURES["frames: invalid UTF-8 text, answered bad_request"] += 1


@pytest.mark.parametrize("data", NOT_UTF8)
def test_invalid_utf8_in_a_text_frame_is_answered(fuzzed: Fuzzed, data: bytes) -> None:
    check_not_utf8(fuzzed, data)
    check_not_utf8(fuzzed, [data[:5], data[5:]])  # the same as a fragmented message


def test_utf8_split_between_fragments_is_still_text(fuzzed: Fuzzed) -> None:
    """A character whose bytes straddle two fragments is good text: decoded as a whole."""
    conn = Conn(fuzzed.server.url)
    try:
        word = "help é".encode()
        conn.ws.send([word[:-1], word[-1:]], text=True)
        reply = conn.reply()
        assert reply["ok"] is False and reply["error"]["code"] == "unknown_command", reply
        assert "é" in reply["error"]["message"]
        conn.probe()
    finally:
        conn.close()


@fuzz_settings(examples=40)
@given(data=st.binary(min_size=1, max_size=200).filter(lambda b: not _is_utf8(b)))
def test_random_bytes_that_are_not_utf8_are_answered(fuzzed: Fuzzed, data: bytes) -> None:
    check_not_utf8(fuzzed, data)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_the_server_is_still_up_and_logged_no_error(fuzzed: Fuzzed) -> None:
    """Runs last in this module: after everything above, a newcomer is served normally."""
    conn = Conn(fuzzed.server.url)
    try:
        who = conn.call({"id": 1, "cmd": "who"})
        assert who["ok"] is True and who["data"]["players"] == []
        assert conn.call({"id": 2, "cmd": "login", "args": {"name": "bob", "password": PASSWORD}})["ok"]
        assert conn.call({"id": 3, "cmd": "whois", "args": {"name": "bob"}})["data"]["online"] is True
    finally:
        conn.close()
    assert not fuzzed.logs.errors()
    assert FIGURES["frames"] >= 1000, FIGURES
    assert set(PER_COMMAND) == set(COMMANDS), f"never reached: {set(COMMANDS) - set(PER_COMMAND)}"
