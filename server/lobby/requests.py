"""Idempotent retries: a mutating request's reply is stored with its result, and a retry
with the same id, command and arguments gets that reply back instead of running again."""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple

import orjson

from server.api.clock import moment
from server.protocol import Request, encode
from server.store import now
from server.store import requests as stored
from server.store.handle import Reads, WriteTx

# Commands whose retry needs no protection: they write nothing that a second run
# could duplicate, or (register, login, resume) are not tied to an account yet.
NOT_IDEMPOTENT = frozenset({"register", "login", "resume", "logout", "watch", "unwatch", "help",
                            "invite", "uninvite", "decline", "tell", "say"})
REPLAY_WINDOW = timedelta(hours=24)


class RequestKey(NamedTuple):
    """A mutating request's idempotency key: a retry has the same id, command and arguments
    (a tuple: made for every such request, at a third of a frozen dataclass's cost)."""

    player_id: int
    request_id: str
    cmd: str
    args_hash: str


def args_digest(args: dict[str, Any]) -> str:
    """The SHA-256 of the arguments' canonical JSON (``json.dumps`` with sorted keys, no
    spaces, ASCII escapes), as stored replies are keyed. orjson writes the same bytes ten
    times as fast for arguments of plain ASCII text, integers and lists of them; anything
    else (a float, other text) takes ``json.dumps``, so every digest stays what it was."""
    if not args:  # resign, accept, ...: every key's digest of no arguments is one
        return _NO_ARGS
    canonical: bytes | None
    try:
        canonical = orjson.dumps(args, option=orjson.OPT_SORT_KEYS, default=list)
    except TypeError:  # what orjson cannot write (a key that is not text, a huge integer)
        canonical = None
    plain = all(type(v) is str or type(v) is int for v in args.values())
    # json.dumps escapes DEL and every non-ASCII character; orjson writes them as they are
    if canonical is None or not canonical.isascii() or b"\x7f" in canonical or (
            not plain and _has_float(args)):
        canonical = json.dumps(args, sort_keys=True, separators=(",", ":"),
                               default=list).encode()
    return hashlib.sha256(canonical).hexdigest()


_NO_ARGS = hashlib.sha256(b"{}").hexdigest()


def _has_float(value: Any) -> bool:
    """Whether a float is anywhere in ``value`` (orjson and ``json`` may write it apart)."""
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_has_float(v) for v in value)
    return isinstance(value, float)


def key_of(player_id: int | None, request: Request) -> RequestKey | None:
    """Mutating commands with an id from a logged-in player are idempotent."""
    if request.id is None or player_id is None or request.spec.read_only \
            or request.cmd in NOT_IDEMPOTENT:
        return None
    return RequestKey(player_id, str(request.id), request.cmd, args_digest(request.args))


def _cutoff() -> str:
    """The oldest stored reply a retry may still get: :data:`REPLAY_WINDOW` ago."""
    return moment(-REPLAY_WINDOW.total_seconds())[0]


Answer = tuple[dict[str, Any], RequestKey]


@dataclass
class StoredReplies:
    """Which requests have a stored reply, and which are running now."""

    known: set[int] = field(default_factory=set)  # a hash of every stored key
    # Other processes may store replies too (several nodes on one database): a job stores its
    # reply only if no run of the same request is stored (the key's row decides)...
    shared: bool = False
    # ... and while other nodes beat, ``known`` cannot say a key is new: a retry reads.
    others: bool = False
    # each request running now, with the duplicates of it that wait for its answer
    inflight: dict[tuple[int, str], list[asyncio.Future[Answer]]] = field(default_factory=dict)

    @staticmethod
    def hashed(player_id: int, request_id: str) -> int:
        """A stored key's hash (rebuilt at every start, so Python's own will do)."""
        return hash((player_id, request_id))

    async def load(self, db: Reads) -> None:
        self.known = {self.hashed(p, r) for p, r in await stored.keys(db)}

    async def prune(self, tx: WriteTx) -> None:
        await stored.prune(tx, _cutoff())

    def may_have(self, key: RequestKey) -> bool:
        """Whether an earlier run of the request may be stored: ``known`` holds a hash of
        every stored key, so the database is read only for a real retry (or a rare hash
        collision), unless other nodes store replies meanwhile."""
        return self.others or self.hashed(key.player_id, key.request_id) in self.known

    async def find(self, db: Reads, key: RequestKey) -> Any | None:
        """The data of an earlier, committed run of the same request, if any (asked only
        where :meth:`may_have` says there may be one)."""
        return _reply_of(await stored.find(db, key.player_id, key.request_id), key)


class AlreadyAnswered(Exception):
    """Another node ran this request first: its job is undone and the stored reply goes out."""

    def __init__(self, data: Any) -> None:
        super().__init__("answered already")
        self.data = data


def _reply_of(row: Any | None, key: RequestKey) -> Any | None:
    """The stored reply of ``row`` if it is an earlier run of ``key`` still in the window."""
    if row is None or (row["cmd"], row["args_hash"]) != (key.cmd, key.args_hash):
        return None
    if row["at"] < _cutoff():
        return None
    return json.loads(row["reply"])


async def remember(replies: StoredReplies, tx: WriteTx, key: RequestKey, data: Any) -> None:
    """Store ``data`` as the reply of ``key`` in ``tx``. Where other nodes may store too, the
    store is conditional, in the same statement (a second insert of the key waits for the
    first one's commit): a run that another node committed first raises
    :class:`AlreadyAnswered`, so the request is done once."""
    # Added before the commit: a hit only costs one database read.
    replies.known.add(replies.hashed(key.player_id, key.request_id))
    if not replies.shared:
        await stored.store(tx, key.player_id, key.request_id, key.cmd, key.args_hash,
                           encode(data), now())
    elif not await stored.store_once(tx, key.player_id, key.request_id, key.cmd, key.args_hash,
                                     encode(data), now(), _cutoff()):
        earlier = _reply_of(await stored.find_in(tx, key.player_id, key.request_id), key)
        raise AlreadyAnswered(earlier)
