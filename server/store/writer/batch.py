"""What a batch of the writer holds: its jobs, their outcomes, its queued writes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from server.store.faults import current_command
from server.store.writer.batching import Writes
from server.store.writer.jobs import JobTx

Job = Callable[[JobTx], Awaitable[Any]]


class Queued:
    """A job waiting for its turn, with the command that queued it (for a fault's log line)."""

    __slots__ = ("command", "future", "job")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.command = current_command.get()
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()


@dataclass
class Batch:
    writes: Writes
    jobs: JobTx | None = None
    items: list[Queued] = field(default_factory=list)
    outcomes: list[tuple[Queued, Any, BaseException | None]] = field(default_factory=list)
    landed: asyncio.Future[None] | None = None  # done when its commit has landed
    seq: int | None = None  # the ``seq`` counter to store with it, when it moved
    next: Batch | None = None  # the batch the commit thread took on right after it
    seconds: float = 0.0  # its commit's, on the commit thread


def retire(b: Batch) -> None:
    """Let go of what a batch holds once its jobs have their answers.

    A batch is in reference cycles (its ``jobs`` keeps a callback bound to
    it), so
    without this everything it holds, a ČAS close's outcome with a standing
    for every player of the ladder included, waits for the cyclic collector:
    a close then ended in a 40-90 ms collection now and then.
    """
    b.jobs = None
    b.items = []
    b.outcomes = []
    b.writes.items = []
