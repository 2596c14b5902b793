"""A batch's queued writes: which statements can wait, how a few rows go as one, savepoints.

Jobs that only write queue their statements (:class:`Writes`); the batch's
``BEGIN IMMEDIATE``, those writes and ``COMMIT`` then run on the commit
thread as one step. A job that reads first runs every write queued before it
(:meth:`Writes.flush`), inside the batch's transaction, so it sees what it
would have seen had each statement run at once. Numbers a job needs without a
read (``seq``, match ids) are handed out in memory (:class:`Counters`).
"""

from __future__ import annotations

import re
import sqlite3
from itertools import chain
from typing import Any

from server.store.faults import FlushFailed

Item = tuple[str, Any, bool]  # sql, parameters, executemany?

_WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLAC")
_deferrable_cache: dict[str, bool] = {}


def deferrable(sql: str) -> bool:
    """A write whose outcome nothing reads back unless asked: it can wait."""
    known = _deferrable_cache.get(sql)
    if known is None:
        known = sql.lstrip()[:6].upper() in _WRITE_VERBS and "RETURNING" not in sql.upper()
        if len(_deferrable_cache) < 4096:
            _deferrable_cache[sql] = known
    return known


# ``INSERT [OR …] INTO table [(columns)] VALUES (?, …) [ON CONFLICT …]``: one row of ``?``
# marks, nothing else around it; a few rows of it can go as one statement.
_ONE_ROW = re.compile(
    r'^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+[\w."]+\s*(?:\([^()]*\))?\s*'
    r"VALUES\s*(\((?:\s*\?\s*,)*\s*\?\s*\))\s*(?:ON\s+CONFLICT\b.*)?$",
    re.IGNORECASE | re.DOTALL)
GROUP_MAX = 64  # rows in one such statement (64 × 9 marks: far below SQLite's limit)
_row_marks: dict[str, tuple[int, int, int] | None] = {}  # sql → (start, end, marks) of the row
_grouped_sql: dict[tuple[str, int], str] = {}


def grouped(sql: str, rows: list[Any]) -> tuple[str, tuple[Any, ...]] | None:
    """``executemany(sql, rows)`` as one statement of ``len(rows)`` VALUES rows, when it can be.

    The commit thread runs each statement with a round trip for the GIL
    (released while SQLite steps): a finished live match's two ratings rows,
    two history rows and two players of a match each cost one instead of two.
    SQLite inserts the rows of a multi-row VALUES one after the other, with the
    same conflict handling, so the rows, their ids and the changes counted are
    those of the rows one by one; a statement that fails keeps none of its rows,
    but a failing write fails its job or transaction either way. Rows that do
    not all match the marks are left to ``executemany`` (and its error).
    """
    if not 2 <= len(rows) <= GROUP_MAX:
        return None
    if sql in _row_marks:
        shape = _row_marks[sql]
    else:
        found = _ONE_ROW.match(sql)
        shape = None if found is None else (found.start(1), found.end(1),
                                             found.group(1).count("?"))
        if len(_row_marks) < 4096:
            _row_marks[sql] = shape
    if shape is None:
        return None
    start, end, marks = shape
    for r in rows:
        if type(r) is not tuple or len(r) != marks:
            return None
    key = (sql, len(rows))
    text = _grouped_sql.get(key)
    if text is None:
        text = sql[:end] + (", " + sql[start:end]) * (len(rows) - 1) + sql[end:]
        if len(_grouped_sql) < 4096:
            _grouped_sql[key] = text
    return text, tuple(chain.from_iterable(rows))


class Counters:
    """Numbers handed out in memory, so that a job needs no read to get one.

    ``seq`` orders every rating ever applied (the ``counters`` row is set to it
    by each transaction that moved it); ``match`` is the last ``matches.id``.
    A job that raises gives its numbers back; a failed transaction reloads them.
    """

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def load(self, conn: sqlite3.Connection) -> None:
        seq = conn.execute("SELECT value FROM counters WHERE name = 'seq'").fetchone()
        top = conn.execute("SELECT coalesce(max(id), 0) FROM matches").fetchone()
        self.values = {"seq": int(seq[0]) if seq else 0, "match": int(top[0])}

    def take(self, name: str) -> int:
        self.values[name] += 1
        return self.values[name]


class Writes:
    """A batch's queued writes, in order, with each job's savepoint put in only when needed.

    A job's savepoint matters only once some of its writes have run inside the
    transaction (a job that raises before that just drops what it queued), so
    ``SAVEPOINT job`` goes in front of them when they first run.
    """

    def __init__(self, conn: sqlite3.Connection, counters: Counters) -> None:
        self.conn = conn
        self.counters = counters
        self.items: list[Item] = []
        self.begun = False  # the batch's transaction is open (some statement had to run)
        self.in_job = False
        self.job_start = 0
        self.job_ran = False  # some of the current job's writes have run
        self.job_counters: dict[str, int] = {}
        self.broken: BaseException | None = None  # an earlier job's write failed
        self.job_error: BaseException | None = None  # the current job's write failed
        self.error: BaseException | None = None
        self.opened: list[sqlite3.Cursor] = []  # cursors made on the loop's thread

    def queue(self, sql: str, params: Any, many: bool) -> None:
        if many:
            params = list(params)
            one = grouped(sql, params)
            if one is not None:
                (sql, params), many = one, False
        self.items.append((sql, params, many))

    def begin_job(self) -> None:
        self.in_job, self.job_start, self.job_ran = True, len(self.items), False
        self.job_error = None
        self.job_counters = dict(self.counters.values)

    def end_job(self, ok: bool) -> None:
        """After a job: keep its writes, or drop them (rolling back those that ran)."""
        self.in_job = False
        if ok:
            if self.job_ran:
                self.items.append(("RELEASE job", (), False))
            return
        self.counters.values = self.job_counters
        if not self.job_ran:
            del self.items[self.job_start:]
            return
        self.items.clear()  # all the job's own, queued after its writes ran
        self.conn.execute("ROLLBACK TO job")
        self.conn.execute("RELEASE job")

    def flush(self) -> None:
        """Run every queued write now, on this thread (the transaction is open).

        A failing write of the current job fails that job (at the statement
        that needed the writes); one of an earlier job breaks the batch.
        """
        if self.broken is not None:
            raise FlushFailed(str(self.broken)) from self.broken
        assert self.begun, "writes run only inside the batch's transaction"
        own_from = len(self.items)  # items after this index are the current job's
        if self.in_job:
            if self.job_ran:
                own_from = -1
            else:
                own_from = self.job_start
                self.items.insert(own_from, ("SAVEPOINT job", (), False))
                self.job_ran = True
        items, self.items = self.items, []
        self.job_start = 0
        done = self.run(items)
        if done < len(items):
            error = self.error
            assert error is not None
            if done > own_from:
                self.job_error = error
                raise error
            self.broken = error
            raise FlushFailed(str(error)) from error

    def run(self, items: list[Item], close: bool = True) -> int:
        """Run ``items`` in order; how many succeeded (``self.error`` says why one failed).

        ``close``: close each cursor at once (on the loop's thread: see
        :meth:`release`; the commit thread's go with their statements).
        """
        execute, executemany = self.conn.execute, self.conn.executemany
        for i, (sql, params, many) in enumerate(items):
            try:
                cursor = executemany(sql, params) if many else execute(sql, params)
            except Exception as e:
                self.error = e
                return i
            if close:
                cursor.close()
        return len(items)

    def release(self) -> None:
        """Close every cursor opened on the loop's thread, before the commit thread takes over.

        A sqlite3 cursor resets its statement when it is closed or freed. Were
        one freed on the loop's thread while the commit thread runs the same
        cached statement, SQLite would report API misuse; closed now, it has
        nothing left to reset.
        """
        for cursor in self.opened:
            cursor.close()
        self.opened.clear()
