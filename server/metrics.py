"""What an operator's Prometheus reads of one running server: counters, gauges and histograms
in a registry of the server's own (several servers in one process never share a series).

The lobby, the transport and the store call the few methods of :class:`Metrics` at the
moments they count; nothing here decides anything. Every label value is bounded: a command
of the command table (or ``unknown``), a stable error code, a configured ladder, a fixed
word. Never a player's name or anything else a client typed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

PREFIX = "matchlobby"
UNKNOWN = "unknown"  # the command of a frame naming none the server has, or none at all
OTHER = "other"  # an error code that is not a stable word (a plugin's mistake)
LOGIN_METHODS = {"login": "password", "resume": "token"}
CODE = re.compile(r"[a-z][a-z0-9_]{0,39}")
LIVE_STATUSES = ("playing", "claimed", "disputed")

# A command is answered in well under a millisecond to a few hundred (an import, a close).
COMMAND_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                  5.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# Closes, corrections and replays read and rate a ladder's log: up to minutes.
LONG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Metrics:
    """The server's metrics and the calls that move them, whether a listener serves them or
    not: a command's, the most frequent, a few dictionary operations (:class:`_Answers`); the
    others a few lookups and ``prometheus_client``'s lock."""

    def __init__(self, node: str | None = None) -> None:
        self.node = node
        # no ``_created`` series beside each counter and histogram: noise to most dashboards
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry = CollectorRegistry()
        self.now = _Now()
        registry.register(self.now)
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        self.answers = _Answers()
        registry.register(self.answers)
        self.rated = Counter(f"{PREFIX}_results_rated_total", "Results rated (live matches and "
                             "event games), by ladder", ["ladder"], registry=registry)
        self.commit_seconds = Histogram(f"{PREFIX}_commit_seconds", "Seconds to commit one "
                                        "batch of writes", buckets=COMMIT_BUCKETS,
                                        registry=registry)
        self.batch_size = Histogram(f"{PREFIX}_commit_batch_size", "Jobs (commands' writes) "
                                    "committed together in one batch", buckets=BATCH_BUCKETS,
                                    registry=registry)
        self.drops = Counter(f"{PREFIX}_outgoing_drops_total", "Connections closed for not "
                             "reading what they were sent, by the limit they passed: messages "
                             "(outgoing_queue) or bytes (outgoing_bytes)", ["limit"],
                             registry=registry)
        self.refusals = Counter(f"{PREFIX}_rate_limited_total", "Refusals for going too fast: "
                                "messages (a connection's frames), reads (an address's read "
                                "budget), commands (logins, registrations, invitations, talk)",
                                ["limit"], registry=registry)
        self.event_close = Histogram(f"{PREFIX}_event_close_seconds", "Seconds to close an "
                                     "event and rate its games, by ladder", ["ladder"],
                                     buckets=LONG_BUCKETS, registry=registry)
        self.correction = Histogram(f"{PREFIX}_correction_seconds", "Seconds to void or "
                                    "adjudicate a result in the log and recompute its ladder",
                                    ["kind"], buckets=LONG_BUCKETS, registry=registry)
        self.replay = Histogram(f"{PREFIX}_replay_seconds", "Seconds to rebuild the ratings "
                                "from the log: at start, after a failed commit (recovery), or "
                                "after another node's change (other_writer)", ["cause"],
                                buckets=LONG_BUCKETS, registry=registry)
        self.known: frozenset[str] = frozenset()
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}

    def name_commands(self, names: Iterable[str]) -> None:
        """The commands the server answers (the router's table): any other name counts as
        :data:`UNKNOWN`."""
        self.known = frozenset(names)

    def command(self, name: str | None, outcome: str, seconds: float,
                limit: str = "commands") -> None:
        """A command was answered ``ok`` or with the error code ``outcome`` (``rate_limited``:
        for going past ``limit``)."""
        self.answers.add(name if name in self.known else UNKNOWN, outcome, seconds)
        if outcome == "rate_limited":
            self._child(self.refusals, limit).inc()

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept (every label here has a few values at most)."""
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def messages_refused(self) -> None:
        """A frame was refused for its connection's message rate."""
        self._child(self.refusals, "messages").inc()

    def dropped(self, limit: str) -> None:
        """A connection was closed for not reading (``limit``: ``messages`` or ``bytes``)."""
        self._child(self.drops, limit).inc()

    def committed(self, seconds: float, jobs: int) -> None:
        """The store committed a batch of ``jobs`` in ``seconds``."""
        self.commit_seconds.observe(seconds)
        self.batch_size.observe(jobs)

    def results_rated(self, ladder: str, results: int) -> None:
        if results:
            self._child(self.rated, ladder).inc(results)

    def event_closed(self, ladder: str, seconds: float) -> None:
        self.event_close.labels(ladder).observe(seconds)

    def corrected(self, kind: str, seconds: float) -> None:
        self.correction.labels(kind).observe(seconds)

    def replayed(self, cause: str, seconds: float) -> None:
        self.replay.labels(cause).observe(seconds)

    def follow(self, connections: Callable[[], int], online: Callable[[], int],
               live: Callable[[], Iterable[str]]) -> None:
        """Where the gauges are read at each scrape: open connections, players logged in here,
        and the status of every live match."""
        self.now.connections, self.now.online, self.now.live = connections, online, live

    def exposition(self) -> bytes:
        """Everything, in Prometheus' text format (with this node's name on every sample when
        the server is one of several nodes)."""
        if self.node is None:
            return generate_latest(self.registry)
        return generate_latest(_Labelled(self.registry, {"node": self.node}))


class _Answers(Collector):
    """The commands answered, their logins and their seconds, counted in plain integers.

    Every command moves them, so they cost a few dictionary operations, not
    ``prometheus_client``'s lock and lookups for each series; the series are made at a
    scrape, which runs on the loop's thread as every count does.
    """

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}  # (command, outcome as received) → answers
        self.seconds: dict[str, list[float]] = {}  # command → answers in each bucket, then sum

    def add(self, name: str, outcome: str, seconds: float) -> None:
        key = (name, outcome)
        self.counts[key] = self.counts.get(key, 0) + 1
        spread = self.seconds.get(name)
        if spread is None:
            spread = self.seconds[name] = [0.0] * (len(COMMAND_BUCKETS) + 2)
        spread[bisect_left(COMMAND_BUCKETS, seconds)] += 1  # a bucket counts seconds <= its bound
        spread[-1] += seconds

    def collect(self) -> Iterator[Metric]:
        logins = CounterMetricFamily(f"{PREFIX}_logins", "Logins (password) and resumes "
                                     "(session token) answered, by outcome: ok or the error "
                                     "code", labels=["method", "outcome"])
        commands = CounterMetricFamily(f"{PREFIX}_commands", "Commands answered, by command "
                                       "and outcome: ok or the error code",
                                       labels=["command", "outcome"])
        merged: dict[tuple[str, str], int] = {}
        for (name, outcome), n in self.counts.items():
            key = (name, outcome if CODE.fullmatch(outcome) else OTHER)
            merged[key] = merged.get(key, 0) + n
        for (name, code), n in merged.items():
            commands.add_metric([name, code], n)
            method = LOGIN_METHODS.get(name)
            if method is not None:
                logins.add_metric([method, code], n)
        seconds = HistogramMetricFamily(f"{PREFIX}_command_seconds", "Seconds from a "
                                        "command's frame read to its reply sent",
                                        labels=["command"])
        bounds = [*map(floatToGoString, COMMAND_BUCKETS), "+Inf"]
        for name, spread in self.seconds.items():
            seconds.add_metric([name], list(zip(bounds, accumulate(spread[:-1]), strict=True)),
                               spread[-1])
        yield logins
        yield commands
        yield seconds


class _Now(Collector):
    """The gauges, read when scraped rather than kept up to date on every change."""

    def __init__(self) -> None:
        self.connections: Callable[[], int] = lambda: 0
        self.online: Callable[[], int] = lambda: 0
        self.live: Callable[[], Iterable[str]] = lambda: ()

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(f"{PREFIX}_connections", "Open WebSocket connections",
                                value=self.connections())
        yield GaugeMetricFamily(f"{PREFIX}_players_online", "Players logged in on this server",
                                value=self.online())
        counts = dict.fromkeys(LIVE_STATUSES, 0)
        for status in self.live():
            if status in counts:
                counts[status] += 1
        live = GaugeMetricFamily(f"{PREFIX}_live_matches", "Live matches by status (every node "
                                 "of a database counts all of them)", labels=["status"])
        for status, n in counts.items():
            live.add_metric([status], n)
        yield live


class _Labelled(Collector):
    """``registry``'s metrics with ``labels`` added to every sample."""

    def __init__(self, registry: CollectorRegistry, labels: dict[str, str]) -> None:
        self.registry = registry
        self.labels = labels

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            labelled = Metric(family.name, family.documentation, family.type, family.unit)
            labelled.samples = [s._replace(labels={**s.labels, **self.labels})
                                for s in family.samples]
            yield labelled
