"""Automatch's pool around the pure decision (:mod:`server.lobby.pairing`): a pass reads the
pool under its lock, takes the seekers' rows as a join takes its two players, leaves out
who is playing, not ready, away or blocked, pairs the rest and starts their matches, the
seeks deleted and the matches inserted in one transaction; only after its commit do both
players hear ``match_started``, as an invitation's players do.

A pass runs soon after each seek made here, and then every tick while someone seeks here
(a seeker's reach widens with time). Every node pairs from the one pool in the database, so
none pairs a player another has paired.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from server.lobby.audience import to_players
from server.lobby.pairing import Seeker, Widening, pair
from server.lobby.state import LiveMatch, Player
from server.protocol import push
from server.store import matches as stored_matches
from server.store import now as timestamp
from server.store import seeks as stored
from server.store import today
from server.store.backends import is_postgres
from server.store.handle import WriteTx, transact

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby

log = logging.getLogger(__name__)
READY = "ready"
MAX_TICK = 1.0  # seconds between two passes while someone seeks here


class Seeking:
    """This node's part of the pool: who seeks here, and the passes that pair."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby
        config = lobby.config
        self.widening = Widening(config.seek_widen_points, config.seek_widen_seconds)
        self.tick = min(config.seek_widen_seconds, MAX_TICK) if config.seek_widen_seconds > 0 \
            else MAX_TICK
        self.here: set[int] = set()  # the players seeking on this node, by id
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writing: set[asyncio.Task[None]] = set()
        self.passes = 0
        self._stopping = False
        self.formed = 0  # matches started by the passes of this node
        self.pairing: set[str] = set()
        """Players (names case-folded) whom a pass's job has paired and whose matches have
        not begun here yet: on SQLite a join's job asks this instead of the database."""

    @property
    def node(self) -> str:
        return self.lobby.config.node_name

    async def start(self) -> None:
        """What a node of this name left in the pool is gone (alone on SQLite: everything)."""
        shared = is_postgres(self.lobby.config.database)
        await transact(self.lobby.db, lambda tx: stored.drop_node(
            tx, self.node if shared else None))
        self._task = asyncio.create_task(self._passes(), name="automatch")

    async def stop(self) -> None:
        """The pass under way finishes (its matches told), and no other starts."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)

    def added(self, player: Player) -> None:
        """``player`` seeks here now (committed): a pass soon."""
        self.here.add(player.id)
        self._wake.set()

    def left(self, player: Player) -> None:
        """``player`` logged out or lost their connection: their seek made here goes."""
        if player.id not in self.here:
            return
        self.here.discard(player.id)
        pid, node = player.id, self.node

        async def drop() -> None:
            try:
                await transact(self.lobby.db, lambda tx: stored.drop(tx, pid, node))
            except Exception as e:  # the next pass drops it (its player is not online)
                log.warning("a seek was not removed (%s)", " ".join(str(e).split()) or
                            type(e).__name__)

        task = asyncio.create_task(drop(), name="unseek")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _passes(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.tick if self.here else None)
            self._wake.clear()
            if self._stopping:
                return
            try:
                if await self._worth_a_pass():
                    await self.run_pass()
                else:
                    self.passes += 1
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the next tick tries again
                log.warning("an automatch pass failed (%s)", " ".join(str(e).split()) or
                            type(e).__name__)

    # ---- one pass -------------------------------------------------------------------------

    def standing(self, ladder: str, name: str) -> tuple[float, float] | None:
        """The player's rating on ``ladder`` and its deviation (a plugin's), if one says."""
        for plugin in self.lobby.plugins:
            hook = getattr(plugin, "seek_rating", None)
            found = None if hook is None else hook(ladder, name)
            if found is not None:
                return float(found[0]), float(found[1])
        return None

    def rating(self, ladder: str, name: str) -> float | None:
        found = self.standing(ladder, name)
        return None if found is None else found[0]

    def _seeker(self, row: Any, since: float) -> Seeker:
        rating, spread = self.standing(row["ladder"], row["name"]) or (0.0, 0.0)
        return Seeker(row["player_id"], row["name"], row["ladder"], row["length"], rating,
                      spread, row["points"], since)

    def chance(self, a: Seeker, b: Seeker) -> float:
        """A beats B, by the expectation of the ladder's system (a plugin's)."""
        for plugin in self.lobby.plugins:
            hook = getattr(plugin, "win_chance", None)
            found = None if hook is None else hook(a.ladder, a.name, b.name, a.length)
            if found is not None:
                return float(found)
        return 0.5

    def _stale(self, row: Any) -> bool:
        """A seek whose player is gone: made here by someone no longer online here, or made
        on a node that has stopped."""
        node = row["node"]
        if node == self.node:
            return row["name"].casefold() not in self.lobby.online
        sharing = self.lobby.sharing
        return sharing is not None and node in sharing.gone and node not in sharing.alive

    def _candidates(self, rows: list[Any]) -> tuple[list[int], list[Any]]:
        """The seeks to drop (their players are gone) and those that may be paired now."""
        stale = [r["player_id"] for r in rows if self._stale(r)]
        ready = [r for r in rows if r["player_id"] not in stale
                 and self.lobby.presence.status(r["name"]) == READY]
        return stale, ready

    async def _worth_a_pass(self) -> bool:
        """Whether the pool as committed has a pair to start or a seek to drop: a pass takes
        the pool's lock and commits; most ticks find nothing to do and need neither."""
        stale, ready = self._candidates(await stored.pool(self.lobby.db))
        if stale:
            return True
        pool = [self._seeker(r, stored.seconds(r["since"])) for r in ready]
        apart = await stored.blocked(self.lobby.db, [s.id for s in pool])
        return bool(pair(pool, time.time(), self.widening, self.chance, apart))

    def _drop_invitations(self, m: LiveMatch) -> None:
        """Two players paired take no other match: the invitations they sent are withdrawn
        (their invitees are told, as after ``uninvite``), those they received lapse."""
        lobby = self.lobby
        for name in (m.a, m.b):
            for inv in list(lobby.invitations.sent.get(name.casefold(), {}).values()):
                if not inv.expired:
                    lobby.publish(to_players(inv.invitee), push("invitation_withdrawn", {
                        "from": inv.inviter, "ladder": inv.ladder}))
            lobby.drop_invitations(name.casefold())

    async def run_pass(self) -> list[LiveMatch]:
        """Pair whom the pool allows now and start their matches; the matches started."""
        lobby = self.lobby
        now = time.time()
        formed: list[LiveMatch] = []
        mine: set[int] = set()
        paired_here: set[str] = set()

        async def job(tx: WriteTx) -> None:
            formed.clear()
            mine.clear()
            self.pairing -= paired_here
            paired_here.clear()
            rows = await stored.hold_pool(tx)
            stale, ready = self._candidates(rows)
            ids = sorted(r["player_id"] for r in ready)
            await stored.hold_players(tx, ids)
            busy = await stored.playing(tx, ids)
            apart = await stored.blocked(tx, ids)
            pool = [self._seeker(r, stored.seconds(r["since"])) for r in ready
                    if r["player_id"] not in busy]
            pairs = pair(pool, now, self.widening, self.chance, apart)
            paired = [s.id for p in pairs for s in p]
            paired_here.update(s.name.casefold() for p in pairs for s in p)
            self.pairing |= paired_here
            gone = {*stale, *busy, *paired}
            await stored.drop_all(tx, sorted(gone))
            day, at = today().isoformat(), timestamp()
            for a, b in pairs:
                mid = await stored_matches.start_live(tx, a.ladder, (a.name, a.id),
                                                      (b.name, b.id), a.length, day, at)
                formed.append(LiveMatch(mid, a.ladder, a.length, a.name, b.name))
            mine.update(r["player_id"] for r in rows
                        if r["node"] == self.node and r["player_id"] not in gone)

        sharing = lobby.sharing
        reserve = sharing is not None and sharing.reserving()
        before = set(self.here)
        try:
            await transact(lobby.db, job, reserve=reserve)
        except BaseException:
            self.pairing -= paired_here
            raise
        self.here = mine | (self.here - before)  # and those who sought meanwhile
        if sharing is not None and reserve:
            sharing.took(False)  # what follows is shared in this commit's place
        try:
            for m in formed:
                lobby.begin_live(m)
                self._drop_invitations(m)
                self.formed += 1
                lobby.publish(to_players(m.a, m.b), push("match_started", lobby.match_summary(m)))
                lobby.presence.changed([n for n in (m.a, m.b) if lobby.session_of(n)])
        finally:
            self.pairing -= paired_here  # their matches are in ``match_of`` now
            if sharing is not None:
                sharing.release()
            self.passes += 1  # its pushes are on their way
        return formed
