"""The ratings plugin: every configured ladder rated by its system, in the lobby's transactions.

It keeps two views per ladder. ``books`` is the working state, advanced
inside transactions; ``published`` is what queries read, updated only after
the transaction commits (:meth:`RatingsPlugin.on_commit`), so nobody sees a
rating before it is durable.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ratings_plugin import store
from ratings_plugin.book import Change, history_rows, ranked_rows, rate_unit, today
from ratings_plugin.commands import cli_commands
from ratings_plugin.corrections import rebuild
from ratings_plugin.ladder_evaluation import evaluation_commands
from ratings_plugin.queries import event_changes, lobby_commands
from ratings_plugin.stakes import Stakes
from server.api import (
    Book,
    CliCommand,
    DomainEvent,
    EventClosed,
    LadderConfig,
    LadderCorrected,
    MatchFinished,
    PluginCommand,
    PluginSetup,
    Publisher,
    RatedUnit,
    Reader,
    Schema,
    Tx,
)
from server.api.systems import history_loading, shared_field

CHANGED_ROWS = 20
"""The most rows a ``ladder_updated`` lists: a push stays a few KB whatever the ladder's size
(every row of 20,000 players would be 2.1 MB to each watcher, most of it queued by the kernel
for watchers that do not read). Watchers fetch the rows they show with ``ladder``."""
FOLLOW_MAX = 2000
"""The most players :meth:`RatingsPlugin.follow` reads again by id; beyond, the ladder is
reloaded whole (one read of every row costs less than that many lookups)."""


@dataclass
class Outcome:
    """The rating side of one domain event, published after its commit."""

    ladder: str
    standings: dict[str, Any]
    changes: list[Change] = field(default_factory=list)
    replace: bool = False
    players: frozenset[str] = frozenset()  # who played in the unit (a close's participants)


class RatingsPlugin:
    """Ratings for every configured ladder."""

    name = "ratings"

    def __init__(self, setup: PluginSetup) -> None:
        self.ladders: dict[str, LadderConfig] = {x.name: x for x in setup.ladders}
        self.schema: Schema = store.schema(setup.ladders)
        self.books: dict[str, Book] = {}
        self.published: dict[str, dict[str, Any]] = {}
        self.ids: dict[str, int] = {}
        self.history_top: dict[str, int] = {}  # each ladder's newest history row read
        self._rows_cache: dict[tuple[str, date], list[dict[str, Any]]] = {}
        self._index_cache: dict[tuple[str, date],
                                tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]] = {}
        self.stakes = Stakes()

    def commands(self) -> Sequence[PluginCommand]:
        return (*lobby_commands(self), *evaluation_commands())

    def cli_commands(self) -> Sequence[CliCommand]:
        return cli_commands()

    # ---- state ------------------------------------------------------------------------------

    async def load(self, reader: Reader, committed: bool) -> None:
        """Books from the ratings table; whole-history systems also reload their games.

        Inside a transaction (after a failed job) ``committed`` is false: the
        books follow the transaction, the published view waits for the commit.

        The newest history row of each ladder is read first: on PostgreSQL each read sees
        what is committed when it starts, so another writer's result may commit between
        two of them. Read before the ratings, the mark can only be older than they are,
        and :meth:`follow` reads such a result again (the same rows); read after them, it
        would count a result the ratings miss as followed, and every later rating of its
        players would start from their ratings before it.
        """
        history_top = {row[0]: int(row[1]) for row in await reader.fetchall(store.HISTORY_TOP)}
        books = {name: x.system.new_book(x.options) for name, x in self.ladders.items()}
        shared = store.shared_by_ladder(await reader.fetchall(store.SHARED_SELECT))
        async for row in reader.stream(store.SELECT_RATINGS):
            ladder = self.ladders.get(row[0])
            if ladder is None:
                continue
            saved = store.stored(row)
            field_ = shared_field(ladder.system)
            if field_ is not None:
                value = shared.get(row[0], {}).get(row[1])
                if value is not None:
                    saved.state[field_] = value
            books[row[0]].standings[row[6]] = ladder.system.decode(ladder.options, row[6], saved)
        self.ids = {row[1]: row[0] for row in await reader.fetchall("SELECT id, name FROM players")}
        self.history_top = history_top
        for name, book in books.items():
            loading = history_loading(book)
            if loading is not None:
                loading.load_history(await reader.log.event_games(name))
        self.books = books
        if committed:
            self.published = {name: dict(book.standings) for name, book in books.items()}
            self._rows_cache.clear()

    async def follow(self, reader: Reader, ladder: str) -> bool:
        """Another writer rated results on ``ladder`` (not a rebuild): the standings of the
        players its history rows since the newest one read here name are read again, and
        shown at once (they are that writer's, committed). A ladder rated by event closes
        (whose every close may move players no history row names) is reloaded whole
        instead (``False``)."""
        config = self.ladders.get(ladder)
        if config is None:
            return True
        if shared_field(config.system) is not None or not config.system.rates_each_result:
            return False  # a close may move standings that no history row names
        top = self.history_top.get(ladder, 0)
        moved = await reader.fetchall(store.HISTORY_SINCE, (top, ladder))
        if not moved:
            return True
        ids = sorted({int(row[1]) for row in moved})
        if len(ids) > FOLLOW_MAX:
            return False
        self.history_top[ladder] = max(int(row[0]) for row in moved)
        rows = await reader.fetchall(store.select_ratings_of(len(ids)), (ladder, *ids))
        book = self.books[ladder]
        shown = self.published.setdefault(ladder, {})
        for row in rows:
            standing = config.system.decode(config.options, row[6], store.stored(row))
            book.standings[row[6]] = shown[row[6]] = standing
            self.ids[row[6]] = int(row[1])
        self._rows_cache = {k: v for k, v in self._rows_cache.items() if k[0] != ladder}
        return True

    async def on_event(self, tx: Tx, event: DomainEvent) -> Outcome | None:
        if isinstance(event, MatchFinished | EventClosed):
            return await self._apply(tx, event.unit)
        return await self._correct(tx, event)

    async def _apply(self, tx: Tx, unit: RatedUnit) -> Outcome:
        self.ids.update(unit.player_ids)
        ladder = self.ladders[unit.ladder]
        book = self.books[unit.ladder]
        new, changes = rate_unit(ladder, book, unit)
        if shared_field(ladder.system) is None:
            await tx.executemany(store.UPSERT, store.rating_rows(ladder, new.values(), self.ids))
        elif new:  # a close with no rated game returns nothing: the shared row stands
            # A close returns the whole ladder, but only the shared field moved for those outside
            # ``changes``: their rows stay as stored.
            await tx.executemany(store.UPSERT, store.rating_rows(
                ladder, (new[c.player] for c in changes), self.ids))
            await tx.executemany(store.SHARED_UPSERT,
                                 [store.shared_row(ladder, new.values(), self.ids)])
        await tx.executemany(store.INSERT_HISTORY,
                             history_rows(unit.ladder, unit, changes, self.ids))
        book.accept(new, unit)
        players = frozenset(p for g in unit.games if ladder.system.counts(ladder.options, g)
                            for p in g.players)
        return Outcome(unit.ladder, new, changes, players=players)

    async def _correct(self, tx: Tx, event: LadderCorrected) -> Outcome:
        ladder = self.ladders[event.ladder]
        book = await rebuild(tx, ladder, self.books[event.ladder], event.seq, self.ids)
        old = self.published.get(event.ladder, {})
        changes = [
            Change(p, old[p].rating if p in old else None, s.rating, dict(event.cause))
            for p, s in sorted(book.standings.items())
            if p not in old or old[p].rating != s.rating
        ]
        self.books[event.ladder] = book
        return Outcome(event.ladder, dict(book.standings), changes, replace=True)

    # ---- after the commit -------------------------------------------------------------------

    def reply_fields(self, event: DomainEvent, outcome: Outcome | None) -> dict[str, Any]:
        if outcome is None:
            return {}
        if isinstance(event, MatchFinished) and event.unit.live:
            return {"changes": [{"player": c.player, "before": c.before, "after": c.after,
                                 "change": None if c.before is None else c.after - c.before}
                                for c in outcome.changes]}
        if isinstance(event, EventClosed):
            return {"changes": [closed_change(c, outcome) for c in outcome.changes]}
        return {"changes": [c.as_dict(outcome.ladder) for c in outcome.changes]}

    def on_commit(self, done: Sequence[tuple[DomainEvent, Any]], publish: Publisher,
                  bulk: bool = False) -> None:
        """Publish the committed outcomes, then push: each change to its player; a single
        result's changes to the ladder's watchers too; and for what rates many at once (a
        close, a correction, results recorded together: ``bulk``, an import, one net change
        per player) one ``ladder_updated`` to the watchers instead, whose size does not grow
        with the ladder or the event."""
        outcomes = [(e, o) for e, o in done if o is not None]
        for _, outcome in outcomes:
            self._published(outcome)
        if bulk:
            if outcomes:
                self._push_bulk(outcomes, publish)
            return
        for event, outcome in outcomes:
            if isinstance(event, MatchFinished):
                for change in outcome.changes:
                    publish.push("rating_changed", change.as_dict(outcome.ladder),
                                 players=[change.player], watchers=outcome.ladder)
                continue
            closed = isinstance(event, EventClosed)
            event_id = event.unit.event_id if isinstance(event, EventClosed) else None
            for change in outcome.changes:
                publish.push("rating_changed",
                             closed_change(change, outcome) if closed
                             else change.as_dict(outcome.ladder),
                             players=[change.player])
            self._push_ladder(publish, outcome.ladder, event_id,
                              [c.player for c in outcome.changes])

    def _push_bulk(self, outcomes: Sequence[tuple[DomainEvent, Outcome]],
                   publish: Publisher) -> None:
        """Per-game pushes would queue hundreds of messages per watcher at once and drop even
        clients that read everything; the net effect is what they need."""
        first: dict[str, Change] = {}
        last: dict[str, Change] = {}
        event_id = None
        ladder = outcomes[0][1].ladder
        for event, outcome in outcomes:
            if isinstance(event, MatchFinished | EventClosed):
                event_id = event.unit.event_id
            for change in outcome.changes:
                first.setdefault(change.player, change)
                last[change.player] = change
        for player, change in last.items():
            before = first[player].before
            publish.push("rating_changed", {
                "ladder": ladder, "player": player, "before": before, "after": change.after,
                "change": None if before is None else change.after - before,
                "cause": {"event": event_id} if event_id is not None else change.cause},
                players=[player])
        if last:
            self._push_ladder(publish, ladder, event_id, list(last))

    def _push_ladder(self, publish: Publisher, ladder: str, event_id: int | None,
                     changed: Collection[str]) -> None:
        def ladder_updated() -> dict[str, Any]:  # built after the reply has gone out
            as_of = today()
            rows = [r for p in changed if (r := self.row_of(ladder, p, as_of)) is not None]
            best = heapq.nsmallest(CHANGED_ROWS, rows,
                                   key=lambda r: (r["rank"], r["player"].casefold()))
            return {"ladder": ladder, "event": event_id, "total": len(self.rows(ladder, as_of)),
                    "changed": best, "more": len(rows) - len(best)}

        publish.push("ladder_updated", ladder_updated, watchers=ladder)

    def _published(self, outcome: Outcome) -> None:
        if outcome.replace:
            self.published[outcome.ladder] = dict(outcome.standings)
        else:
            self.published.setdefault(outcome.ladder, {}).update(outcome.standings)
        self._rows_cache = {k: v for k, v in self._rows_cache.items() if k[0] != outcome.ladder}

    # ---- reading ----------------------------------------------------------------------------

    def rows(self, ladder: str, as_of: date) -> list[dict[str, Any]]:
        """The published ladder's rows (cached until the ladder changes)."""
        key = (ladder, as_of)
        cached = self._rows_cache.get(key)
        if cached is None:
            cached = ranked_rows(self.ladders[ladder], self.published.get(ladder, {}).values(),
                                 as_of)
            self._rows_cache[key] = cached
        return cached

    def row_of(self, ladder: str, player: str, as_of: date) -> dict[str, Any] | None:
        key = (ladder, as_of)
        index = self._index_cache.get(key)
        if index is None or self._rows_cache.get(key) is not index[0]:
            rows = self.rows(ladder, as_of)
            index = (rows, {r["player"]: r for r in rows})
            self._index_cache[key] = index
        return index[1].get(player)

    def ratings_of(self, player: str, as_of: date, only: str | None = None
                   ) -> list[dict[str, Any]]:
        out = []
        for ladder in self.ladders.values():
            if only is not None and ladder.name != only:
                continue
            row = self.row_of(ladder.name, player, as_of)
            if row is not None:
                out.append({"ladder": ladder.name, "system": ladder.system.name, **row})
        return out

    def describe_player(self, name: str, brief: bool) -> dict[str, Any]:
        ratings = self.ratings_of(name, today())
        if brief:
            return {"ratings": {r["ladder"]: r["rating"] for r in ratings}}
        return {"ratings": ratings}

    def describe_match(self, ladder: str, a: str, b: str, length: int | None) -> dict[str, Any]:
        """The match's ``stake`` on a ladder rated live, from the published ratings (nobody
        learns of a rating before it is durable); none for an unrated match."""
        config = self.ladders.get(ladder)
        if config is None or not config.system.live_matches or length is None:
            return {}
        found = self.stakes.of(config, self.published.get(ladder, {}), a, b, length)
        return {} if found is None else {"stake": found}

    def _standing(self, config: LadderConfig, player: str) -> Any:
        """The player's published standing, or a newcomer's."""
        found = self.published.get(config.name, {}).get(player)
        return found if found is not None else config.system.new_book(
            config.options).new_standing(player)

    def seek_rating(self, ladder: str, player: str) -> tuple[float, float] | None:
        """Automatch: the player's published rating on a ladder rated live, and its deviation
        where the system's rows show one (Glicko-2's ``rd``; else 0)."""
        config = self.ladders.get(ladder)
        if config is None or not config.system.live_matches:
            return None
        row = config.system.row(config.options, self._standing(config, player), True)
        return float(row["rating"]), float(row.get("rd") or 0.0)

    def win_chance(self, ladder: str, a: str, b: str, length: int | None) -> float | None:
        """Automatch: the chance that ``a`` beats ``b`` by the ladder's own expectation, from
        the published standings (what a stake shows)."""
        config = self.ladders.get(ladder)
        if config is None or not config.system.live_matches:
            return None
        return config.system.expectation(config.options, self._standing(config, a),
                                         self._standing(config, b), length)

    async def describe_event(self, reader: Reader, event_id: int,
                             closed: bool) -> dict[str, Any]:
        """What ``event show`` adds (an optional hook): a closed event's rating changes, a
        row per player, so that its view and its export tell what it did to the ladder."""
        return {"changes": await event_changes(self, reader, event_id)} if closed else {}

    def players_on(self, ladder: str) -> int:
        return len(self.published.get(ladder, {}))


def closed_change(change: Change, outcome: Outcome) -> dict[str, Any]:
    """A change an event's close made: ``played`` in the event, or moved without playing (a
    ČAS close rescales the whole ladder)."""
    return {**change.as_dict(outcome.ladder), "played": change.player in outcome.players}


def plugin(setup: PluginSetup) -> RatingsPlugin:
    """The ``matchlobby.plugins`` entry point."""
    return RatingsPlugin(setup)
