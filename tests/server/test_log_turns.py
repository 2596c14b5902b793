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


ROWS = 10 * YIELD_ROWS


async def turns_during(rows: AsyncIterator[int]) -> tuple[list[int], int]:
    """Read ``rows`` while another task counts its turns: (the rows, turns it had mid-read)."""
    seen: list[int] = []
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            turns += 0 < len(seen) < ROWS
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    async for row in rows:
        seen.append(row)
    task.cancel()
    return seen, turns


async def test_other_tasks_run_while_a_long_log_is_read() -> None:
    seen, turns = await turns_during(with_turns(InlineCursor(ROWS)))  # type: ignore[arg-type]
    assert seen == list(range(ROWS))  # every row, in order
    assert turns >= 9  # a turn every YIELD_ROWS rows


async def test_without_turns_the_same_reading_holds_the_loop() -> None:
    """The control: iterating the inline cursor directly gives the other task no turn."""
    seen, turns = await turns_during(InlineCursor(ROWS).__aiter__())
    assert seen == list(range(ROWS)) and turns == 0
