"""Reading a long log inside a writer job leaves the event loop turns to serve others.

A job's reads run inline on the loop (``server.writer.JobConnection``), so
``server.log.with_turns`` yields every ``YIELD_ROWS`` rows. Checked on a real
cursor whose reads never wait, as a job's do: another task must run while
the rows are read, not only after.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from server.log import YIELD_ROWS, with_turns


class InlineCursor:
    """A cursor whose rows come without ever waiting (what a job's cursor does)."""

    def __init__(self, count: int) -> None:
        self.count = count

    async def __aiter__(self) -> AsyncIterator[int]:  # type: ignore[override]
        for k in range(self.count):
            yield k


async def test_other_tasks_run_while_a_long_log_is_read() -> None:
    ticks: list[int] = []
    read = 0

    async def other() -> None:
        while True:
            ticks.append(read)
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    got = []
    async for row in with_turns(InlineCursor(10 * YIELD_ROWS)):  # type: ignore[arg-type]
        got.append(row)
        read += 1
    task.cancel()
    assert got == list(range(10 * YIELD_ROWS))  # every row, in order
    during = [t for t in ticks if 0 < t < 10 * YIELD_ROWS]
    assert len(during) >= 9  # a turn every YIELD_ROWS rows


async def test_without_turns_the_same_reading_holds_the_loop() -> None:
    """The control: iterating the inline cursor directly gives the other task no turn."""
    ticks: list[int] = []
    read = 0

    async def other() -> None:
        while True:
            ticks.append(read)
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    async for _ in InlineCursor(10 * YIELD_ROWS):
        read += 1
    task.cancel()
    assert [t for t in ticks if 0 < t < 10 * YIELD_ROWS] == []
