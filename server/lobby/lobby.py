"""The lobby's state: who is connected and online, who watches what, the live matches and
invitations, and the plugins that follow the database. It decides nothing about a command:
handlers do (server/handlers/), through the request context the router gives them."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from server import PROTOCOL_VERSION, __version__
from server.accounts import PasswordHasher
from server.api import (
    DomainEvent,
    EventClosed,
    LadderConfig,
    LadderCorrected,
    LobbyPlugin,
    MatchFinished,
    Publisher,
)
from server.commands import COMMANDS, CommandTable
from server.config import Config, Limits
from server.limits import LoginRate, LoginThrottle, ReadBudget, RegistrationLimit
from server.lobby.account_watch import AccountWatch
from server.lobby.audience import Audience, to_players
from server.lobby.call import fail
from server.lobby.event_views import EventListing, EventStandings
from server.lobby.invitation_limit import InvitationLimit
from server.lobby.invitations import Invitations
from server.lobby.presence import Presence
from server.lobby.publish import Message, fan_out
from server.lobby.requests import StoredReplies
from server.lobby.seeking import Seeking
from server.lobby.sharing import SharedPushes
from server.lobby.state import HOLDING, LIVE, Elsewhere, Invitation, LiveMatch, Player, Session
from server.lobby.talk_limit import TalkLimit
from server.metrics import Metrics
from server.protocol import push
from server.store import account_changes as stored_changes
from server.store import bans as stored_bans
from server.store import invitations as stored_invitations
from server.store import matches as stored_matches
from server.store import now as timestamp
from server.store import players as stored_players
from server.store import sessions as stored_sessions
from server.store.handle import WriteTx, transact
from server.store.storage import LobbyDatabase

ENDED_KEPT = 10_000  # live matches ended lately, remembered (see ``Lobby.ended``)
REPLACED = "replaced"
BANNED = "banned"
BANNED_CLOSE = 4001  # the close code of a banned account's connection
LOGGED_OUT = {
    REPLACED: "You logged in from another connection; this one has been closed.",
    stored_changes.PASSWORD: "Your password was changed; log in again with the new one.",
    stored_changes.ROLE: "Your role was changed; log in again.",
    stored_changes.LOGOUT_ALL: "You logged out everywhere.",
    stored_changes.LOGOUT_OTHERS: "You ended your other sessions from another connection.",
}
"""Why a connection was logged out (the push ``logged_out``'s ``cause``), in words."""


@dataclass
class Effects:
    """The domain events a command's transaction emitted, each with every plugin's outcome."""

    done: list[tuple[DomainEvent, dict[str, Any]]] = field(default_factory=list)


class Lobby:
    def __init__(self, config: Config, db: LobbyDatabase,
                 plugins: Iterable[LobbyPlugin] = (), metrics: Metrics | None = None) -> None:
        self.config = config
        self.db = db
        self.metrics = metrics or Metrics()
        self.ladders: dict[str, LadderConfig] = {x.name: x for x in config.ladders}
        self._ladder_keys = {x.name.casefold(): x for x in config.ladders}
        self.plugins = list(plugins)
        self.commands = CommandTable(COMMANDS.values())  # the router's, once it has one
        self.sessions: set[Session] = set()
        # Who hears what: ladder watchers, and the sessions that listed `who` (presence).
        self.watching: dict[str, set[Session]] = {}
        self.presence = Presence(self, config.limits.presence_interval)
        self.online: dict[str, Session] = {}
        self.elsewhere: dict[str, Elsewhere] = {}  # online on the database's other nodes
        self.players: dict[str, Player] = {}
        self.matches: dict[int, LiveMatch] = {}
        self.match_of: dict[str, int] = {}
        # live matches ended lately (here or told by another node): a row read before the end
        # was committed, arriving after it, must not bring one back
        self.ended: deque[int] = deque(maxlen=ENDED_KEPT)
        self._ended: set[int] = set()
        self.invitations = Invitations(config.invitation_timeout, self._invitation_expired)
        self.requests = StoredReplies()
        self.standings = EventStandings()
        self.listing = EventListing()
        lim = config.limits
        self.hasher = PasswordHasher(config.password, lim.password_hash_slots,
                                     lim.password_hash_queue)
        self.login_throttle = LoginThrottle(per_pair=lim.login_free_failures,
                                            per_address=lim.login_address_failures,
                                            per_account=lim.login_account_failures,
                                            cap=lim.login_max_delay)
        self.use_limits(lim)
        self.account_watch = AccountWatch(self)
        db.on_commit_failure = self.reload_plugins
        db.on_job_failure = self.resync_plugins
        db.on_job_start = self._job_started
        db.on_commit = self.metrics.committed
        self._plugins_touched = False
        self._unpublished: set[str] = set()  # plugins reloaded following an open transaction
        self.sharing: SharedPushes | None = None  # several nodes: pushes for the others
        self.seeking = Seeking(self)  # automatch's pool

    # ---- start-up -------------------------------------------------------------------------

    def use_limits(self, lim: Limits, old: Limits | None = None) -> None:
        """The allowances the lobby counts with, made from ``lim``. After a reload (``old``:
        the limits before it) the login throttle keeps its counts and trusted addresses, and
        only the token buckets whose values changed are made anew (their counts start afresh)."""

        def changed(*keys: str) -> bool:
            return old is None or any(getattr(old, k) != getattr(lim, k) for k in keys)

        throttle = self.login_throttle
        throttle.pairs.free = lim.login_free_failures
        throttle.addresses.free = lim.login_address_failures
        throttle.accounts.free = lim.login_account_failures
        for backoff in (throttle.pairs, throttle.addresses, throttle.accounts):
            backoff.cap = lim.login_max_delay
        if changed("invitations_per_minute", "invitations_per_pair_per_minute",
                   "invitations_received_per_minute"):
            self.invitation_limit = InvitationLimit(lim.invitations_per_minute,
                                                    lim.invitations_per_pair_per_minute,
                                                    lim.invitations_received_per_minute)
        if changed("talk_per_minute", "talk_address_per_minute", "shouts_per_minute",
                   "shouts_address_per_minute"):
            self.talk_limit = TalkLimit(lim)
        if changed("registrations_per_hour"):
            self.registrations = RegistrationLimit(lim.registrations_per_hour)
        if changed("account_logins_per_minute", "address_logins_per_minute"):
            self.login_rate = LoginRate(lim.account_logins_per_minute,
                                        lim.address_logins_per_minute)
        if changed("read_units_per_second", "read_units_burst"):
            self.reads = ReadBudget(lim.read_units_per_second, lim.read_units_burst)

    async def start(self, other_writers: bool = False) -> None:
        """Load what is committed: stored replies, the plugins, players, live matches.
        ``other_writers``: other servers share the database; from the plugins' load on,
        every batch follows what they commit (:meth:`follow_other_writers`)."""
        await transact(self.db, self.requests.prune)
        await transact(self.db, lambda tx: stored_sessions.prune(tx, timestamp()))
        # every ladder has its version row before any writer may move it (a command line's
        # replay bumps the rows there are)
        await transact(self.db, lambda tx: tx.executemany(
            "INSERT INTO ladder_versions (ladder, version) VALUES (?, 0) "
            "ON CONFLICT (ladder) DO NOTHING", [(name,) for name in self.ladders]))
        await transact(self.db, stored_matches.keep_live_players)
        await self.requests.load(self.db)
        await self.reload_plugins("start")
        if other_writers:  # before the next batch (seeking.start writes), which moves `seen`
            self.follow_other_writers()
        changes_seen = await stored_changes.latest(self.db)  # before the players: AccountWatch.start
        for row in await stored_players.all_players(self.db):
            p = Player(row["id"], row["name"], row["role"], row["password_hash"],
                       row["last_login"], row["dropped"])
            self.players[p.key] = p
        for row in await stored_matches.live(self.db):
            self._follow_live(self.live_from_row(row))
        await self.account_watch.start(changes_seen)
        await self.seeking.start()

    async def stop(self) -> None:
        """Stop following the database (before it is closed)."""
        await self.seeking.stop()
        await self.account_watch.stop()

    # ---- the plugins ----------------------------------------------------------------------

    def _job_started(self) -> None:
        self._plugins_touched = False

    @property
    def plugins_touched(self) -> bool:
        """Whether the job running now has changed what the plugins hold."""
        return self._plugins_touched

    async def resync_plugins(self) -> None:
        """A job failed and its savepoint was rolled back: follow the open transaction. What
        the plugins publish then waits for the next batch (:meth:`_republish_plugins`): the
        transaction may hold what other writers committed, and a plugin's mark of what it
        has followed moves past it."""
        if not self._plugins_touched:
            return
        self._plugins_touched = False
        for plugin in self.plugins:
            self._unpublished.add(plugin.name)
            await plugin.load(self.db.writer_tx(), committed=False)

    def follow_other_writers(self) -> None:
        """Several writers share the database (PostgreSQL: other nodes, the command line): a
        job of this node's writer that holds a ladder another writer moved reloads the
        plugins first, so no rating is computed from a stale copy."""
        self.db.on_moved = self._follow_plugins
        self.db.on_republish = self._republish_plugins

    async def _follow_plugins(self, committed: bool, ladder: str | None) -> bool:
        """Each plugin follows what another writer committed on ``ladder`` (its optional
        ``follow``), or reloads whole; whether all of them followed. A plugin reloaded
        inside a job (``committed`` false) follows the transaction: what it publishes waits
        for :meth:`_republish_plugins`, once the batch has committed."""
        tx = self.db.writer_tx()
        followed = True
        started = time.perf_counter()
        for plugin in self.plugins:
            follow = getattr(plugin, "follow", None)
            if ladder is not None and follow is not None and await follow(tx, ladder):
                continue
            followed = False
            if committed:
                self._unpublished.discard(plugin.name)
            else:
                self._plugins_touched = True  # should the job fail, follow its rollback too
                self._unpublished.add(plugin.name)
            await plugin.load(tx, committed=committed)
        if not followed:
            self.metrics.replayed("other_writer", time.perf_counter() - started)
        return followed

    async def _republish_plugins(self) -> None:
        """The plugins that reloaded inside the last batch reload as committed, at the next
        batch's start; the plugins that followed there are left as they are (a ratings
        plugin beside one without ``follow`` is not read whole again at every batch)."""
        if not self._unpublished:
            return
        tx = self.db.writer_tx()
        started = time.perf_counter()
        for plugin in self.plugins:
            if plugin.name in self._unpublished:
                await plugin.load(tx, committed=True)
        self._unpublished.clear()
        self.metrics.replayed("other_writer", time.perf_counter() - started)

    async def reload_plugins(self, cause: str = "recovery") -> None:
        """Rebuild plugin state from committed data (after start or a failed commit); ``cause``
        names it in the replay metric."""
        started = time.perf_counter()
        for plugin in self.plugins:
            await plugin.load(self.db.writer_tx(), committed=True)
        self._unpublished.clear()
        if self.plugins:
            self.metrics.replayed(cause, time.perf_counter() - started)

    async def emit(self, tx: WriteTx, event: DomainEvent, effects: Effects) -> dict[str, Any]:
        """Let every plugin react inside ``tx``; returns the fields the plugins add to the reply
        (computed now, so the stored reply holds them too)."""
        if isinstance(event, LadderCorrected):
            await tx.hold_ladder(event.ladder, rebuild=True)
        else:
            await tx.hold_ladder(event.unit.ladder)
        self._plugins_touched = True  # shared: the command's reserved place says so first
        outcomes: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        for plugin in self.plugins:
            outcome = await plugin.on_event(tx, event)
            outcomes[plugin.name] = outcome
            fields.update(plugin.reply_fields(event, outcome))
        effects.done.append((event, outcomes))
        return fields

    def committed(self, effects: Effects, publisher: Publisher, bulk: bool = False) -> None:
        """The transaction holding ``effects`` committed: each plugin publishes its outcomes and
        pushes (after the command's reply). ``bulk``: an import's many results."""
        if not effects.done:
            return
        for event, _ in effects.done:
            if isinstance(event, MatchFinished | EventClosed):
                self.metrics.results_rated(event.unit.ladder, sum(
                    1 for game in event.unit.games if game.unrated_reason is None))
        for plugin in self.plugins:
            plugin.on_commit([(event, outcomes.get(plugin.name))
                              for event, outcomes in effects.done], publisher, bulk)

    def describe_player(self, name: str, brief: bool) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for plugin in self.plugins:
            fields.update(plugin.describe_player(name, brief))
        return fields

    def describe_match(self, ladder: str, a: str, b: str, length: int | None) -> dict[str, Any]:
        """What the plugins add to a match of A against B, played or proposed: ``stake`` is
        ``None`` unless one says what it puts at stake."""
        fields: dict[str, Any] = {"stake": None}
        for plugin in self.plugins:
            fields.update(plugin.describe_match(ladder, a, b, length))
        return fields

    def match_summary(self, m: LiveMatch) -> dict[str, Any]:
        return {**m.summary(), **self.describe_match(m.ladder, m.a, m.b, m.length)}

    # ---- sessions -------------------------------------------------------------------------

    def connect(self, session: Session) -> None:
        self.sessions.add(session)
        session.send(push("hello", {"server": self.config.server_name, "version": __version__,
                                    "protocol": PROTOCOL_VERSION}))

    def disconnect(self, session: Session) -> None:
        session.closed = True
        self.sessions.discard(session)
        self.presence.forget(session)
        for ladder in list(session.watching):
            self.unwatch(session, ladder)
        self.sign_out(session)

    def watch(self, session: Session, ladder: str) -> None:
        session.watching.add(ladder)
        self.watching.setdefault(ladder, set()).add(session)

    def unwatch(self, session: Session, ladder: str) -> None:
        session.watching.discard(ladder)
        self.watching.get(ladder, set()).discard(session)

    def sign_out(self, session: Session) -> None:
        p = session.player
        session.player = None
        session.token_hash = None
        if p is None or self.online.get(p.key) is not session:
            return
        del self.online[p.key]
        self.drop_invitations(p.key)
        self.seeking.left(p)
        m = self.matches.get(self.match_of.get(p.name, 0))
        if m is not None and p.key not in self.elsewhere:  # not logged in on another node
            m.away_since[p.name] = time.monotonic()
        self.presence.changed([p.name], coming=True)

    def sign_in(self, session: Session, player: Player, changes_seen: int = 0) -> None:
        """Log ``session`` in as ``player``; ``changes_seen``: the account's latest change
        (``account_changes``) committed before this login, which therefore does not end it."""
        old = self.online.get(player.key)
        if old is not None and old is not session:
            self.replaced(old)
        if session.player is not None and session.player.key != player.key:
            self.sign_out(session)
        session.player = player
        session.changes_seen = changes_seen
        session.logged_in_at = time.time()
        self.online[player.key] = session
        self.elsewhere.pop(player.key, None)  # a login here replaces one elsewhere
        self.back(player.name)
        self.presence.changed([player.name], coming=True)

    def replaced(self, session: Session) -> None:
        """A newer login of the same account (here, or on another node) ends this one."""
        self.end_login(session, REPLACED)
        session.close(4000, "replaced by a newer login")

    def end_login(self, session: Session, cause: str) -> None:
        """Log ``session`` out for ``cause`` (see :data:`LOGGED_OUT`), telling it why first.
        The connection stays open as a spectator's (a replaced one is closed next)."""
        fan_out([session], push("logged_out", {"reason": LOGGED_OUT[cause], "cause": cause}))
        self.sign_out(session)

    def banned(self, session: Session, until: str | None, reason: str | None) -> None:
        """The account was banned: the connection is told why and until when, then closed."""
        fan_out([session], push("logged_out", {"reason": stored_bans.told(until, reason),
                                               "cause": BANNED, "until": until}))
        self.sign_out(session)
        session.close(BANNED_CLOSE, "banned")

    def invitations_changed(self, *ops: list[Any]) -> None:
        """The invitations changed here (``ops``: :meth:`Invitations.follow`'s): the other
        nodes' copies follow."""
        if self.sharing is not None:
            for op in ops:
                self.sharing.note({"invitations": op})

    def drop_invitations(self, key: str) -> None:
        """A player signed out: what they sent and received lapses without a word, here, in
        the other nodes' copies and (on a database nodes share) in its rows."""
        had = [*self.invitations.sent.get(key, {}).values(),
               *self.invitations.received.get(key, {}).values()]
        self.invitations.drop_player(key)
        if had and self.sharing is not None:
            self.invitations_changed(["drop_player", key])
            if any(i.stored for i in had):
                self.sharing.write(lambda tx: stored_invitations.drop(tx, key, key),
                                   f"the invitations of {key}")

    def _invitation_expired(self, invitation: Invitation) -> None:
        """Both players hear that an invitation lapsed unanswered (from the node that made
        it: the others' copies expire silently)."""
        if not invitation.here:
            return
        self.publish(to_players(invitation.inviter, invitation.invitee),
                     push("invitation_expired", {"from": invitation.inviter,
                                                 "to": invitation.invitee,
                                                 "ladder": invitation.ladder}))

    def publish(self, audience: Audience, message: Message, skip: Session | None = None) -> None:
        """Push ``message`` to ``audience``: this node's connections at once (but ``skip``), the
        other nodes' through the database. A function making it is called only if someone is
        to hear it."""
        targets = self._connections_of(audience, skip)
        sharing = self.sharing is not None and self.sharing.alive
        if not targets and not sharing:
            return
        made = message() if callable(message) else message
        if targets:
            fan_out(targets, made)
        if sharing:
            assert self.sharing is not None
            self.sharing.share(audience, made)

    def deliver(self, audience: Audience, message: dict[str, Any]) -> None:
        """A push another node shared, to this node's connections."""
        targets = self._connections_of(audience, None)
        if targets:
            fan_out(targets, message)

    def _connections_of(self, audience: Audience, skip: Session | None) -> set[Session]:
        """``audience`` resolved to this node's connections now, each once."""
        if audience.everyone:
            return self.sessions - {skip} if skip is not None else set(self.sessions)
        targets = set(self.sessions_of(audience.players))
        if audience.watchers is not None:
            targets.update(self.watching.get(audience.watchers, ()))
        if audience.admins:
            targets.update(s for s in self.online.values() if s.player is not None
                           and s.player.role == "admin")
        targets.discard(skip)
        return targets

    def deliver_to_everyone(self, message: dict[str, Any]) -> None:
        fan_out(list(self.sessions), message)

    # ---- lookups --------------------------------------------------------------------------

    def session_of(self, name: str) -> Session | None:
        return self.online.get(name.casefold())

    def sessions_of(self, names: Iterable[str]) -> list[Session]:
        online = self.online
        return [s for n in names if (s := online.get(n.casefold())) is not None]

    def watchers(self, ladder: str) -> list[Session]:
        return list(self.watching.get(ladder, ()))

    def ladder(self, name: str) -> LadderConfig:
        """The ladder named ``name``, whatever its case (as players' names are)."""
        ladder = self.ladders.get(name) or self._ladder_keys.get(name.casefold())
        if ladder is None:
            raise fail("not_found", f"No ladder named {name!r}; 'ladders' lists them.")
        return ladder

    def player(self, name: str) -> Player:
        p = self.players.get(name.casefold())
        if p is None:
            raise fail("not_found", f"No player named {name!r}.")
        return p

    # ---- live matches ---------------------------------------------------------------------

    def begin_live(self, m: LiveMatch) -> None:
        """A live match started here and committed: this node plays it, the others learn it."""
        self.matches[m.id] = m
        self.match_of[m.a] = self.match_of[m.b] = m.id
        self.live_changed(m)

    def hold(self, m: LiveMatch) -> bool:
        """Its players are playing ``m`` while it is played or claimed; disputed, it waits for
        an admin and they are free (another match of theirs is theirs to play). Whether
        that changed what they play."""
        changed = False
        for name in (m.a, m.b):
            if m.status in HOLDING:
                changed |= self.match_of.get(name) != m.id
                self.match_of[name] = m.id
            elif self.match_of.get(name) == m.id:
                del self.match_of[name]
                changed = True
        return changed

    def disputed_of(self, name: str) -> list[LiveMatch]:
        """The disputed matches of ``name`` waiting for an admin, oldest first."""
        return sorted((m for m in self.matches.values()
                       if m.status == "disputed" and name in (m.a, m.b)), key=lambda m: m.id)

    def live_changed(self, m: LiveMatch) -> None:
        """``m`` changed here (claimed, disputed, an abort asked): the other nodes' copies
        follow. What decides between nodes is the match's row (server/handlers/matches.py)."""
        if self.sharing is not None:
            self.sharing.note({"match": m.note()})

    def end_live(self, m: LiveMatch, here: bool = True) -> None:
        """Forget a live match that has ended (finished, aborted or voided) and committed;
        ``here``: on this node (the others are told)."""
        self._ended_now(m.id)
        self.matches.pop(m.id, None)
        for name in (m.a, m.b):
            if self.match_of.get(name) == m.id:
                del self.match_of[name]
        if here and self.sharing is not None:
            self.sharing.note({"match": {"id": m.id, "ended": True}})

    @staticmethod
    def live_from_row(row: Any) -> LiveMatch:
        m = LiveMatch(row["id"], row["ladder"], row["length"], row["side_a"], row["side_b"],
                      row["status"], row["claimed_by"], disputed_at=row["disputed_at"])
        if row["score_a"] is not None and row["claimed_by"]:
            # stored in side order; a claim's scores are the claimant's first
            sa, sb = row["score_a"], row["score_b"]
            m.claim_scores = (sa, sb) if m.side_of(row["claimed_by"]) == "a" else (sb, sa)
        return m

    def _follow_live(self, m: LiveMatch) -> None:
        """Keep a live match this node did not start (loaded, or another node's): a player
        online on no node is away from now on (a claim counts from here)."""
        now = time.monotonic()
        m.away_since = {n: now for n in (m.a, m.b)
                        if n.casefold() not in self.online and n.casefold() not in self.elsewhere}
        self.matches[m.id] = m
        self.hold(m)

    def _ended_now(self, mid: int) -> None:
        if mid not in self._ended:
            if len(self.ended) == self.ended.maxlen:
                self._ended.discard(self.ended[0])
            self.ended.append(mid)
            self._ended.add(mid)

    def followed(self, note: dict[str, Any]) -> None:
        """Another node started, changed or ended a live match (:meth:`live_changed`)."""
        m = self.matches.get(note["id"])
        if note.get("ended"):
            self.settle(note["id"], None)
            return
        if m is not None:
            m.follow(note)
            if self.hold(m):
                self._tell_status(m)
            return
        if note["id"] in self._ended:
            return  # a change shared after the end was (notes of two nodes may cross)
        new = LiveMatch(note["id"], note["ladder"], note["length"], note["a"], note["b"])
        new.follow(note)
        self._adopt(new)

    def settle(self, mid: int, row: Any | None) -> None:
        """Live match ``mid`` as its row now says (``None``, or a status not live: it has
        ended, though another node's note of it may still be on its way): ended, it is
        forgotten; live, this node's copy takes the row's status and claim (an abort asked
        is kept: it is not stored), or this node follows it from now on."""
        m = self.matches.get(mid)
        if row is None or row["status"] not in LIVE:
            self._ended_now(mid)
            if m is not None:
                self.end_live(m, here=False)
                self._tell_status(m)
        elif m is not None:
            stored = self.live_from_row(row)
            m.status, m.claimed_by, m.claim_scores = (stored.status, stored.claimed_by,
                                                      stored.claim_scores)
            m.disputed_at = stored.disputed_at
            if self.hold(m):
                self._tell_status(m)
        elif mid not in self._ended:
            self._adopt(self.live_from_row(row))

    def _adopt(self, m: LiveMatch) -> None:
        self._follow_live(m)
        self._tell_status(m)

    def _tell_status(self, m: LiveMatch) -> None:
        """``m`` started or ended for this node: its players here are now playing or not."""
        self.presence.changed([n for n in (m.a, m.b) if self.session_of(n)])

    async def check_live(self, ids: Iterable[int]) -> None:
        """Another node's notes of these live matches were applied; notes of two nodes may
        cross (each is written after its change's commit), so each match follows its row,
        read now, which is at least as new as the notes."""
        for mid in ids:
            self.settle(mid, await stored_matches.get(self.db, mid))

    async def reload_live(self) -> None:
        """Take the live matches from the database again (another node appeared, or this
        one missed pushes): those ended meanwhile are forgotten, the others follow their
        rows."""
        before = list(self.matches.values())  # one started while reading is not ended
        live = {row["id"]: row for row in await stored_matches.live(self.db)}
        for ended in [m for m in before if m.id not in live and self.matches.get(m.id) is m]:
            self.settle(ended.id, None)
        for mid, row in live.items():
            self.settle(mid, row)

    def away(self, name: str) -> None:
        """``name`` left every node: a live match's opponent may claim after the timeout."""
        m = self.matches.get(self.match_of.get(name, 0))
        if m is not None:
            m.away_since.setdefault(name, time.monotonic())

    def back(self, name: str) -> None:
        m = self.matches.get(self.match_of.get(name, 0))
        if m is not None:
            m.away_since.pop(name, None)
