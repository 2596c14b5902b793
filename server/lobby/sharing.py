"""What a node shares with the other nodes of one PostgreSQL database: its pushes, who is
online on it (the ``online`` table and a note to the others), and that it is alive (its
beat, :mod:`server.store.pg.nodes`).

A node delivers the pushes its own commands cause to its own connections at once (after
the reply, as a single node does) and shares them: they are written to the ``pushes``
table in a transaction of the node's writer, which commits them with one ``NOTIFY``, and
every other node's feed (:class:`~server.store.pg.feed.PushFeed`) reads them in commit
order and delivers them to its connections through the same path
(:meth:`~server.lobby.lobby.Lobby.deliver`). The pushes of one event loop turn are shared
in one job.

A command's pushes are decided once its change has committed, so they cannot be written in
that transaction; its place among the pushes is: while other nodes beat, the command's
commit also writes a placeholder row (``write(..., reserve=True)``), and what the command
shares until it is done (its pushes and notes) fills that row in the next share. The other
nodes' feeds stop at a placeholder until it is filled, so every node delivers the pushes in
the order of the commits that caused them. Should a node die between the two, its
placeholders are skipped once it is found dead (it stopped beating:
:mod:`server.store.pg.nodes`) and the players of the other nodes hear ``refresh``, as they
do when their own node finds it missed pushes that were pruned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from server.lobby.account_watch import NOTIFIED_POLL_INTERVAL
from server.lobby.audience import Audience
from server.lobby.presence import OFFLINE
from server.lobby.state import Elsewhere, Invitation
from server.protocol import Push, push
from server.store import invitations as stored_invitations
from server.store import now
from server.store.pg import nodes
from server.store.pg.database import RESERVED, PgDatabase
from server.store.pg.feed import KEEP, Pushed, PushFeed
from server.store.pg.port import FILLED, RATINGS_MOVED

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby

log = logging.getLogger(__name__)

NODE_LOST = ("One of the lobby's servers stopped; some updates may not have reached this "
             "connection: reload what you show (ladders, matches, who is online).")
NOTE = ""  # the audience of a note for the nodes themselves (presence), not for connections
PRUNE_EVERY = 10_000  # pushes shared between two prunings of the table (to its newest KEEP)
REFRESH = ("Some of the lobby's updates could not reach this connection; reload what you "
           "show (ladders, matches, who is online).")
RELOAD_LIVE = orjson.dumps({"reload": "matches"}).decode()  # a note: read the live matches
@dataclass(eq=False)
class Reservation:
    """A place reserved in ``pushes`` by a command's commit, and what the command shares
    until it is done (:mod:`server.lobby.sharing` fills the place with it)."""

    pos: int
    ratings: bool = False  # its job changed what the plugins hold: the fill says so first
    items: list[tuple[str, str]] = field(default_factory=list)
    open: bool = True


CURRENT: ContextVar[Reservation | None] = ContextVar("push_reservation", default=None)
"""The reservation of the command whose code runs in this context (none: outside one)."""


FILL_RETRY = 0.5  # seconds before a fill that failed is tried again
FOLLOW_TIMEOUT = 5.0  # seconds a node waits for its writer to reload before delivering anyway


class SharedPushes:
    """This node's side of the push path between nodes: what it shares, what it hears."""

    def __init__(self, lobby: Lobby, url: str, node: str) -> None:
        self.lobby = lobby
        self.node = node
        self.started_at = now()
        self.alive: dict[str, nodes.Node] = {}  # the other nodes beating at the last beat
        self.deaths = 0
        self._announced = False
        self.gone: set[str] = set()  # nodes that left or died (their places are not waited for)
        self.feed = PushFeed(url, self._heard, self._missed, tick=self._beat,
                             tick_every=nodes.HEARTBEAT, own=node,
                             waiting=lambda origin: origin not in self.gone,
                             accounts_changed=lobby.account_watch.nudge)
        self._held: list[tuple[str, str]] = []
        # presence changes here: (name, status, when the login here was made; 0: offline)
        self._statuses: list[tuple[str, str, float]] = []
        self._rewrite = False  # the next flush rewrites this node's rows in ``online``
        self._unstored: list[Invitation] = []  # made alone: rows to write with the next flush
        self._fills: list[Reservation] = []  # reserved places whose commands are done
        self._scheduled = False  # a flush is due at the end of this turn
        self._writing: set[asyncio.Task[None]] = set()
        self.shared = 0
        self.heard = 0
        self._unpruned = 0

    async def start(self) -> None:
        """Beat and hear the other nodes; then who is online on them (what a dead node of
        this name left in ``online`` is cleared)."""
        await self.feed.start()
        self.lobby.account_watch.interval = NOTIFIED_POLL_INTERVAL
        others = list(self.alive)

        async def clear(tx: Any) -> None:  # what this name and dead nodes left
            await tx.execute("DELETE FROM online" + (
                f" WHERE node NOT IN ({', '.join('?' for _ in others)})" if others else ""),
                others)

        await self.lobby.db.write(clear)
        for row in await self.lobby.db.fetchall("SELECT name_key, name, node, status FROM online"):
            if row["node"] in self.alive and row["name_key"] not in self.lobby.elsewhere:
                self.lobby.elsewhere[row["name_key"]] = Elsewhere(row["name"], row["node"],
                                                                  row["status"])
                self.lobby.back(row["name"])  # not away from its live match
        await self._standing_invitations()

    async def _standing_invitations(self) -> None:
        """The invitations the other servers made (their rows): known here from the start, so
        a player who comes here finds them (an expired one lapses at once)."""
        lobby = self.lobby
        for row in await lobby.db.fetchall("SELECT invitee_key, inviter_key, ladder, length, "
                                           "expires_at FROM invitations"):
            if lobby.invitations.get(row["invitee_key"], row["inviter_key"]) is not None:
                continue
            inviter, invitee = (lobby.players.get(row[k]) for k in ("inviter_key", "invitee_key"))
            if inviter is None or invitee is None:
                continue
            lobby.invitations.add(Invitation(inviter.name, invitee.name, row["ladder"],
                                             row["length"], row["expires_at"], here=False,
                                             stored=True))

    async def stop(self) -> None:
        """Write what is held, stop hearing and beating, and leave the nodes' table (before
        the database closes): the other nodes do not take this one for dead."""
        self._flush()
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)
        await self.feed.stop()
        async def leave(tx: Any) -> None:
            await tx.execute("DELETE FROM online WHERE node = ?", (self.node,))
            await nodes.leave(tx, self.node)

        try:
            await self.lobby.db.write(leave)
        except Exception as e:
            log.warning("could not leave the nodes' table (%s); the other nodes will take this "
                        "one for dead", " ".join(str(e).split()) or type(e).__name__)

    async def _beat(self, conn: Any) -> None:
        """This node's heartbeat; a node that was beating and stopped is dead."""
        others = await nodes.beat(conn, self.node, socket.gethostname(), os.getpid(),
                                  self.started_at)
        if not self._announced:
            self._announced = True
            await nodes.announce(conn)
        beating = {n.name: n for n in others if not n.dead}
        self.gone -= beating.keys()
        self.gone |= {n.name for n in others if n.dead}
        for name in self.alive.keys() - beating.keys():
            self.gone.add(name)
            if any(n.name == name for n in others):  # stale, not gone: it did not leave
                self._dead(self.alive[name])
            self._gone(name)
        if beating and not self.alive:
            self._snapshot()
        self.alive = beating
        self.lobby.requests.others = bool(beating)

    def _dead(self, node: nodes.Node) -> None:
        self.deaths += 1
        log.warning("node %s (%s, pid %d) stopped beating; its players' connections are lost",
                    node.name, node.host, node.pid)
        self.lobby.deliver_to_everyone(push("refresh", {"reason": NODE_LOST}))
        name = node.name
        self.write(lambda tx: tx.execute("DELETE FROM online WHERE node = ?", (name,)),
                    "the online rows of a dead node")

    def _gone(self, node: str) -> None:
        """A node left or died: its players are offline from now on."""
        lobby = self.lobby
        left = [e.name for e in lobby.elsewhere.values() if e.node == node]
        for name in left:
            del lobby.elsewhere[name.casefold()]
            lobby.away(name)
        lobby.presence.changed(left, coming=True, here=False)

    def _snapshot(self) -> None:
        """Another node beats where none did: alone, this node shared nothing; now it says
        who is online here, all at once (its rows in ``online`` rewritten)."""
        lobby = self.lobby
        self._rewrite = True
        self.presence([(s.player.name, lobby.presence.status(s.player.name), s.logged_in_at)
                       for s in lobby.online.values() if s.player is not None], force=True)
        # alone, it shared no match either: the new node takes them from the database now
        self._held.append((NOTE, RELOAD_LIVE))
        self._store_invitations()

    def _store_invitations(self) -> None:
        """Alone, this node kept its invitations in memory only: now each standing one gets
        its row (so it survives this node, and the row decides its answer) and the other
        nodes hear of it."""
        lobby = self.lobby
        alone = [inv for by_invitee in lobby.invitations.sent.values()
                 for inv in by_invitee.values() if inv.here and not inv.stored and not inv.expired]
        self._unstored += alone  # their rows are written with the notes, in one commit
        for inv in alone:
            self._held.append((NOTE, orjson.dumps({"invitations": ["add", inv.note()]}).decode()))

    def presence(self, statuses: Sequence[tuple[str, str, float]], force: bool = False
                 ) -> None:
        """These players' status here changed (``offline``: they left this node): the other
        nodes hear it, and ``online`` says it, with the next flush. Alone, nothing is
        shared (see :meth:`_snapshot`)."""
        if not (statuses or force) or not (self.alive or force):
            return
        self._soon()
        self._statuses.extend(statuses)

    def note(self, body: dict[str, Any]) -> None:
        """A note for the other nodes themselves (not for connections): a live match's
        change; written with the next flush, before the pushes the same change causes."""
        if not self.alive:
            return
        self._hold(NOTE, orjson.dumps(body).decode())

    def share(self, audience: Audience, message: dict[str, Any]) -> None:
        """Have the other nodes deliver ``message`` to ``audience`` (written with the next
        flush, at the end of this loop turn)."""
        body = message.encoded() if isinstance(message, Push) else orjson.dumps(message)
        self._hold(audience.as_text(), body.decode())  # a push encoded once, here as for sending

    def _hold(self, audience: str, body: str) -> None:
        """Into the open reservation of the command whose code runs now (so the other nodes
        deliver it in the place of that command's commit), else to be appended."""
        reservation = CURRENT.get()
        if reservation is not None and reservation.open:
            reservation.items.append((audience, body))
        else:
            self._soon()
            self._held.append((audience, body))

    def _soon(self) -> None:
        """Flush at the end of this turn of the loop (once, however much is held)."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def reserving(self) -> bool:
        """Whether a command's write should reserve the place of its pushes (another node
        beats: they are shared)."""
        return bool(self.alive)

    def took(self, ratings: bool) -> None:
        """The write just committed in this command's code reserved a place in ``pushes``
        (:data:`~server.store.pg.database.RESERVED`): what the command shares from now on
        goes there (``ratings``: its job changed what the plugins hold, so the other nodes
        follow them before they deliver it). A place it reserved before is filled with what
        it holds."""
        pos = RESERVED.get()
        if pos is None:
            return
        RESERVED.set(None)
        self.release()
        CURRENT.set(Reservation(pos, ratings))

    def release(self) -> None:
        """The command whose code runs now has sent its pushes: its reserved place is filled
        with them (none: an empty list) at the next flush."""
        reservation = CURRENT.get()
        if reservation is None:
            return
        CURRENT.set(None)
        if reservation.open:
            reservation.open = False
            self._fills.append(reservation)
            self._soon()

    def _flush(self) -> None:
        self._scheduled = False
        held, self._held = self._held, []
        fills, self._fills = self._fills, []
        statuses, self._statuses = self._statuses, []
        rewrite, self._rewrite = self._rewrite, False
        unstored, self._unstored = self._unstored, []
        if fills:
            self._fill(fills)
        if not held and not statuses and not rewrite and not unstored:
            return
        self._unpruned += len(held) + bool(statuses)
        prune = self._unpruned >= PRUNE_EVERY
        if prune:
            self._unpruned = 0
        node = self.node

        invitations = self.lobby.invitations

        async def job(tx: Any) -> None:
            for inv in unstored:  # those still standing; from now on their rows decide
                if invitations.get(inv.invitee.casefold(), inv.inviter.casefold()) is inv \
                        and not inv.expired:
                    await stored_invitations.put(tx, inv.invitee.casefold(),
                                                 inv.inviter.casefold(), inv.ladder,
                                                 inv.length, inv.expires_at)
                    inv.stored = True
            if rewrite:
                await tx.execute("DELETE FROM online WHERE node = ?", (node,))
            if statuses:
                await tx.executemany("DELETE FROM online WHERE name_key = ? AND node = ?",
                                     [(n.casefold(), node) for n, s, _ in statuses
                                      if s == OFFLINE])
                await tx.executemany(
                    "INSERT INTO online (name_key, name, node, status) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (name_key) DO UPDATE SET name = excluded.name, "
                    "node = excluded.node, status = excluded.status",
                    [(n.casefold(), n, node, s) for n, s, _ in statuses if s != OFFLINE])
                tx.publish(NOTE, orjson.dumps({"presence": statuses}).decode())
            for audience, body in held:
                tx.publish(audience, body)
            if prune:  # a feed further behind than KEEP resyncs instead
                await tx.execute("DELETE FROM pushes WHERE pos <= (SELECT value FROM counters "
                                 "WHERE name = 'push') - ?", (KEEP,))

        self.write(job, f"{len(held)} pushes and {len(statuses)} presence changes for the "
                         "other nodes", pushes=len(held))

    def _fill(self, fills: list[Reservation]) -> None:
        """Fill the places these commands reserved, at once, beside the writer (on a
        connection of the read pool: a long job in the writer's queue must not hold the
        other nodes' feeds back); a fill that fails is tried again half a second later."""
        db = self.lobby.db
        assert isinstance(db, PgDatabase)
        rows = [(r.pos, orjson.dumps([[NOTE, RATINGS_MOVED]] * r.ratings + r.items).decode())
                for r in fills]

        async def fill() -> None:
            try:
                await db.fill(rows, FILLED)
            except Exception as e:
                log.warning("%d reserved places were not filled (%s); trying again",
                            len(rows), " ".join(str(e).split()) or type(e).__name__)
                await asyncio.sleep(FILL_RETRY)
                self._fills = fills + self._fills
                self._soon()
            else:
                self.shared += sum(len(r.items) for r in fills)

        task = asyncio.create_task(fill(), name="fill-places")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    def write(self, job: Any, what: str, pushes: int = 0) -> None:
        """Run ``job`` in the writer in the background (in order with the earlier ones)."""
        async def write() -> None:
            try:
                await self.lobby.db.write(job)
            except Exception as e:
                log.warning("%s were not written (%s)", what,
                            " ".join(str(e).split()) or type(e).__name__)
            else:
                self.shared += pushes

        task = asyncio.create_task(write(), name="share-pushes")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _heard(self, pushes: Sequence[Pushed]) -> None:
        notes = self._notes(pushes)
        bodies = {p.body for p in notes}
        if RATINGS_MOVED in bodies:
            await self._follow()
        if RELOAD_LIVE in bodies:
            await self._reload_live()
        read = [n for n in notes.values() if n is not None]
        named = [entry[0] for n in read for entry in n.get("presence", ())
                 if isinstance(entry, list) and entry and isinstance(entry[0], str)]
        if any(name.casefold() not in self.lobby.players for name in named):
            # a player who registered there a moment ago: known here before shown online
            with contextlib.suppress(Exception):
                await self.lobby.account_watch.poll()
        self._deliver(pushes, notes)
        changed = [n["match"]["id"] for n in read if isinstance(n.get("match"), dict)
                   and "id" in n["match"] and not n["match"].get("ended")]
        if changed:
            try:
                await self.lobby.check_live(changed)
            except Exception as e:
                log.warning("could not read live matches another node changed (%s)",
                            " ".join(str(e).split()) or type(e).__name__)

    def _notes(self, pushes: Sequence[Pushed]) -> dict[Pushed, dict[str, Any] | None]:
        """The other nodes' notes among ``pushes``, each read once (``None``: a marker such as
        :data:`RATINGS_MOVED`, or one that cannot be read)."""
        notes: dict[Pushed, dict[str, Any] | None] = {}
        for p in pushes:
            if p.origin == self.node or p.audience != NOTE:
                continue
            note = None
            if p.body not in (RATINGS_MOVED, RELOAD_LIVE):
                with contextlib.suppress(orjson.JSONDecodeError):
                    loaded = orjson.loads(p.body)
                    note = loaded if isinstance(loaded, dict) else None
                if note is None:
                    log.error("note %d from node %s cannot be read; skipped", p.pos, p.origin)
            notes[p] = note
        return notes

    def _deliver(self, pushes: Sequence[Pushed],
                 notes: dict[Pushed, dict[str, Any] | None]) -> None:
        for p in pushes:
            if p.origin == self.node:
                continue  # delivered here when it was shared
            self.heard += 1
            try:
                if p.audience == NOTE:
                    note = notes.get(p)
                    if note is not None:
                        self._noted(p.origin, note)
                    continue
                audience, message = Audience.from_text(p.audience), orjson.loads(p.body)
            except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError,
                    IndexError):
                log.error("push %d from node %s cannot be read; skipped", p.pos, p.origin)
                continue
            self.lobby.deliver(audience, message)

    async def _follow(self) -> None:
        """Another node changed the plugins' data: a batch of this node's writer reloads it
        (:meth:`~server.lobby.lobby.Lobby.follow_other_writers`), then this node delivers
        that node's pushes, so a reader told of a change finds it here too."""
        async def nothing(_tx: Any) -> None:
            return None

        try:
            async with asyncio.timeout(FOLLOW_TIMEOUT):
                await self.lobby.db.write(nothing)
        except Exception as e:
            log.warning("could not reload the ratings another node changed (%s); reads here "
                        "may lag until the next write", " ".join(str(e).split())
                        or type(e).__name__)

    async def _reload_live(self) -> None:
        try:
            await self.lobby.reload_live()
        except Exception as e:
            log.warning("could not read the live matches again (%s)",
                        " ".join(str(e).split()) or type(e).__name__)

    def _noted(self, node: str, note: dict[str, Any]) -> None:
        """A note of another node for the nodes, not for connections: its players' statuses
        (with when each logged in there), or a live match's change. A player online there
        who logged in there after logging in here: the login here ends, as a login replaced
        on one node does; one who logged in here since: the note is older news."""
        lobby = self.lobby
        if "match" in note:
            lobby.followed(note["match"])
            return
        if "invitations" in note:
            lobby.invitations.follow(note["invitations"])
            return
        told = []
        for name, status, since in note.get("presence", ()):
            key = name.casefold()
            mine = lobby.online.get(key)
            if mine is not None and mine.logged_in_at >= since:
                continue  # said before the login here (the note was on its way): older news
            there = lobby.elsewhere.get(key)
            if status == OFFLINE:
                if there is not None and there.node == node:
                    del lobby.elsewhere[key]
                    lobby.away(name)
                    told.append(name)
                continue
            lobby.elsewhere[key] = Elsewhere(name, node, status)
            lobby.back(name)
            told.append(name)
            if mine is not None:
                lobby.replaced(mine)
        lobby.presence.changed(told, coming=True, here=False)

    async def _missed(self) -> None:
        """Pushes were pruned before this node read them: every connection hears
        ``refresh``, nothing older than what it showed."""
        await self._reload_live()
        self.lobby.deliver_to_everyone(push("refresh", {"reason": REFRESH}))
