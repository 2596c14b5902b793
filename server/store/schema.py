"""The lobby's tables and their migrations, and the tables plugins describe.

The core schema is versioned with ``PRAGMA user_version``; each plugin's by
its row in ``plugin_schemas``. Both are brought up to date one version per
``BEGIN IMMEDIATE`` transaction, so a failed step leaves the previous version
whole. Plugins describe their tables with ``server.api`` records
(:class:`~server.api.Table`, :class:`~server.api.Index`), turned into SQL here.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Awaitable, Callable, Sequence

from server.api import Index, Schema, Table, TableColumn
from server.api.storage import Step
from server.store.port import SqliteTx, begin_immediate

SCHEMA_VERSION = 17


MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE players (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL UNIQUE,
        password_hash TEXT,
        role TEXT NOT NULL DEFAULT 'player' CHECK (role IN ('player', 'admin')),
        created_at TEXT NOT NULL,
        last_login TEXT,
        dropped INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        ladder TEXT NOT NULL,
        date TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
        created_at TEXT NOT NULL,
        closed_at TEXT,
        seq INTEGER UNIQUE
    );
    CREATE TABLE matches (
        id INTEGER PRIMARY KEY,
        ladder TEXT NOT NULL,
        event_id INTEGER REFERENCES events (id),
        side_a TEXT NOT NULL,
        side_b TEXT NOT NULL,
        length INTEGER,
        played_on TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN
            ('playing', 'claimed', 'disputed', 'finished', 'aborted', 'voided')),
        winner TEXT CHECK (winner IN ('a', 'b', 'draw')),
        score_a INTEGER,
        score_b INTEGER,
        how TEXT,
        unrated_reason TEXT,
        claimed_by TEXT,
        disputed INTEGER NOT NULL DEFAULT 0,
        seq INTEGER UNIQUE,
        created_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX matches_event ON matches (event_id);
    CREATE INDEX matches_ladder_seq ON matches (ladder, seq);
    CREATE TABLE match_players (
        match_id INTEGER NOT NULL REFERENCES matches (id),
        player_id INTEGER NOT NULL REFERENCES players (id),
        side TEXT NOT NULL CHECK (side IN ('a', 'b')),
        PRIMARY KEY (match_id, player_id)
    );
    CREATE INDEX match_players_player ON match_players (player_id);
    CREATE TABLE corrections (
        id INTEGER PRIMARY KEY,
        match_id INTEGER NOT NULL REFERENCES matches (id),
        kind TEXT NOT NULL,
        old_status TEXT NOT NULL,
        old_winner TEXT,
        new_status TEXT NOT NULL,
        new_winner TEXT,
        reason TEXT,
        by_player INTEGER REFERENCES players (id),
        at TEXT NOT NULL
    );
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO counters VALUES ('seq', 0);
    """,
    2: """
    CREATE TABLE requests (
        player_id INTEGER NOT NULL REFERENCES players (id),
        request_id TEXT NOT NULL,
        cmd TEXT NOT NULL,
        args_hash TEXT NOT NULL,
        reply TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (player_id, request_id)
    ) WITHOUT ROWID;
    CREATE INDEX requests_at ON requests (at);
    """,
    # The ratings plugin's tables (ratings, history, Peklo values) are its own: a database made
    # before it owned them keeps them, and the plugin adopts them.
    3: "",
    4: """
    CREATE TABLE plugin_schemas (
        name TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    );
    """,
    # Resumable logins: a token's SHA-256 hash only, never the token.
    5: """
    CREATE TABLE sessions (
        token_hash TEXT PRIMARY KEY,
        player_id INTEGER NOT NULL REFERENCES players (id),
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX sessions_player ON sessions (player_id);
    """,
    # An event's version: every change to its results (a result, an import, a correction, the
    # close) moves it on, so a node's cached standings are known to be current by one read.
    6: """
    ALTER TABLE events ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    """,
    # What changed about an account (a new password, a role, a logout everywhere), appended in
    # the transaction of the change: every server polls it and ends the account's open logins.
    7: """
    CREATE TABLE account_changes (
        id INTEGER PRIMARY KEY,
        player_id INTEGER NOT NULL REFERENCES players (id),
        kind TEXT NOT NULL,
        by_player INTEGER REFERENCES players (id),
        at TEXT NOT NULL
    );
    CREATE INDEX account_changes_player ON account_changes (player_id, id);
    """,
    # Pushes for the lobby's other processes (several nodes on one PostgreSQL database):
    # appended in the transaction that caused them, numbered from the 'push' counter, its row
    # held until the commit, so every node reads them in commit order (server/store/pg/feed.py).
    8: """
    CREATE TABLE pushes (
        pos INTEGER PRIMARY KEY,
        origin TEXT NOT NULL,
        audience TEXT NOT NULL,
        body TEXT NOT NULL
    );
    INSERT INTO counters VALUES ('push', 0);
    """,
    # The lobby's nodes on one PostgreSQL database: each beats every few seconds (``beat``:
    # seconds since the epoch by the database's clock); one that stops is found dead by the
    # others (server/store/pg/nodes.py).
    9: """
    CREATE TABLE nodes (
        name TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        beat REAL NOT NULL
    );
    """,
    # Who is online on which node (several nodes on one PostgreSQL database): written by each
    # node with the notes it shares (server/lobby/sharing.py), read by a node that starts.
    10: """
    CREATE TABLE online (
        name_key TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        node TEXT NOT NULL,
        status TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX online_node ON online (node);
    """,
    # What the plugins hold moved (replaced by each ladder's version in 13).
    11: """
    INSERT INTO counters VALUES ('ratings', 0);
    """,
    # The standing invitations of a lobby whose nodes share a PostgreSQL database: the row
    # decides an answer racing a withdrawal on another node (server/store/invitations.py).
    # One node alone keeps them in memory only.
    12: """
    CREATE TABLE invitations (
        invitee_key TEXT NOT NULL,
        inviter_key TEXT NOT NULL,
        ladder TEXT NOT NULL,
        length INTEGER,
        expires_at TEXT,
        PRIMARY KEY (invitee_key, inviter_key)
    ) WITHOUT ROWID;
    CREATE INDEX invitations_inviter ON invitations (inviter_key);
    """,
    # Each ladder's place in the log on a database several writers share: a job that changes a
    # ladder's ratings bumps its row, and the row's lock holds the ladder until the commit; a
    # writer whose copy is older follows it first (server/store/pg/database.py), reading
    # again only what changed unless the ladder was rebuilt since (``rebuilt``: the version
    # of its latest correction or replay). PostgreSQL
    # also draws ``seq`` and match ids from sequences from now on (PG_MIGRATIONS there);
    # SQLite's single writer keeps its counters.
    13: """
    CREATE TABLE ladder_versions (
        ladder TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        rebuilt INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    DELETE FROM counters WHERE name = 'ratings';
    """,
    # Talk and automatch: what several nodes must agree on lives here, not in one node's memory.
    # while_away: how a player's match ended while they were connected nowhere (a claim, an
    # admin's decision or void), kept until their next login on any node tells them.
    14: """
    CREATE TABLE shouts (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        name TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE TABLE blocks (
        blocker_id INTEGER NOT NULL REFERENCES players (id),
        blocked_id INTEGER NOT NULL REFERENCES players (id),
        PRIMARY KEY (blocker_id, blocked_id)
    ) WITHOUT ROWID;
    CREATE TABLE mutes (
        player_id INTEGER NOT NULL PRIMARY KEY REFERENCES players (id),
        until TEXT,
        by_player INTEGER REFERENCES players (id),
        at TEXT NOT NULL
    );

    CREATE TABLE seeks (
        player_id INTEGER NOT NULL PRIMARY KEY REFERENCES players (id),
        ladder TEXT NOT NULL,
        length INTEGER,
        points INTEGER,
        since TEXT NOT NULL,
        node TEXT NOT NULL
    );
    CREATE INDEX seeks_ladder ON seeks (ladder, length);

    ALTER TABLE matches ADD COLUMN disputed_at TEXT;
    CREATE TABLE while_away (
        id INTEGER PRIMARY KEY,
        player_id INTEGER NOT NULL REFERENCES players (id),
        match_id INTEGER NOT NULL REFERENCES matches (id),
        at TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX while_away_player ON while_away (player_id);
    """,
    # Account administration: who made each account change (``by_name``: an admin's name, or
    # ``cli:`` and the operating-system user for the command line), the new role or the ban's
    # end (``detail``) and its reason; and the bans themselves (``until`` NULL: no end).
    15: """
    ALTER TABLE account_changes ADD COLUMN by_name TEXT;
    ALTER TABLE account_changes ADD COLUMN detail TEXT;
    ALTER TABLE account_changes ADD COLUMN reason TEXT;
    CREATE TABLE bans (
        player_id INTEGER NOT NULL PRIMARY KEY REFERENCES players (id),
        until TEXT,
        reason TEXT,
        by_player INTEGER REFERENCES players (id),
        by_name TEXT NOT NULL,
        at TEXT NOT NULL
    );
    """,
    # Who plays a live match (played or claimed), kept beside the match's status by the
    # statements that change it: a join's check reads two rows here, not each player's whole
    # history of matches.
    16: """
    CREATE TABLE live_players (
        player_id INTEGER NOT NULL PRIMARY KEY REFERENCES players (id),
        match_id INTEGER NOT NULL REFERENCES matches (id)
    );
    CREATE INDEX live_players_match ON live_players (match_id);
    INSERT INTO live_players (player_id, match_id)
        SELECT mp.player_id, max(m.id) FROM match_players mp JOIN matches m ON m.id = mp.match_id
        WHERE m.status IN ('playing', 'claimed') GROUP BY mp.player_id
    """,
    # SQLite: the CHECKs of ``matches`` as comparisons (:func:`checks_as_comparisons`). A CHECK
    # of ``IN`` is a plain array comparison on PostgreSQL: nothing to change there.
    17: "",
}


# ``CHECK (column IN ('v1', 'v2', 'v3', …))``: plain quoted words, no quote or comma inside.
_CHECK_IN = re.compile(r"CHECK \((\w+) IN\s*\(\s*('\w*'(?:\s*,\s*'\w*')*)\s*\)\)")
_REFUSED = ("may not be modified", "not authorized")  # defensive mode; an authorizer's no


def _as_comparisons(found: re.Match[str]) -> str:
    column, values = found.group(1), [v.strip() for v in found.group(2).split(",")]
    if len(values) <= 2:  # SQLite compares up to two values one by one already
        return found.group(0)
    return "CHECK (" + " OR ".join(f"{column} = {v}" for v in values) + ")"


def checks_as_comparisons(conn: sqlite3.Connection) -> None:
    """Rewrite the ``CHECK (column IN (…))`` lists of ``matches`` as ``=`` comparisons.

    SQLite checks a list of more than two values through a temporary b-tree it builds anew at
    every row written: four a live match (a match's insert and its finishing update each
    check ``status`` and ``winner``), the largest cost of those writes. The comparisons
    accept and refuse the same values (NULL included) and build nothing. Only the table's
    text changes, not its rows, so it is rewritten in place, in this step's transaction, as
    SQLite documents for changes that leave the stored rows as they are (``writable_schema``,
    then ``schema_version`` one up). A connection that refuses that (SQLite's defensive mode)
    keeps the ``IN`` lists: slower, as strict.
    """
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'matches'").fetchone()
    sql = _CHECK_IN.sub(_as_comparisons, row[0])
    if sql == row[0]:
        return
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    try:
        try:
            conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' "
                         "AND name = 'matches'", (sql,))
        except sqlite3.DatabaseError as e:
            if not any(reason in str(e) for reason in _REFUSED):
                raise
            return
        conn.execute(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = OFF")
    # read back at once: a text SQLite cannot parse fails this step, whose transaction rolls back
    conn.execute("SELECT count(*) FROM matches WHERE 0").fetchall()


SQLITE_STEPS: dict[int, Callable[[sqlite3.Connection], None]] = {17: checks_as_comparisons}
"""What a version does on SQLite beyond its statements."""


class SchemaError(RuntimeError):
    """The lobby's or a plugin's tables are newer than the code, or cannot be brought up to
    date."""


async def _in_transaction(conn: sqlite3.Connection, step: Callable[[], Awaitable[None]]) -> None:
    await begin_immediate(conn)
    try:
        await step()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the lobby's tables to ``target``, one migration per transaction."""
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaError(f"database schema {version} is newer than this server ({SCHEMA_VERSION})")
    while version < target:
        version += 1

        async def step(version: int = version) -> None:
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            if version in SQLITE_STEPS:
                SQLITE_STEPS[version](conn)
            conn.execute(f"PRAGMA user_version = {version}")

        await _in_transaction(conn, step)
    return version


# ---- the tables plugins describe ------------------------------------------------------------

SQL_TYPES = {"integer": "INTEGER", "real": "REAL", "text": "TEXT", "blob": "BLOB"}


def _column(c: TableColumn, table: Table) -> str:
    sql = f"{c.name} {SQL_TYPES[c.type]}"
    if table.autoincrement == c.name:
        return sql + " PRIMARY KEY"
    return sql if c.nullable else sql + " NOT NULL"


def table_sql(table: Table) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``table`` (an autoincrement key is SQLite's rowid)."""
    parts = [_column(c, table) for c in table.columns]
    if table.primary_key and table.primary_key != (table.autoincrement,):
        parts.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
    suffix = " WITHOUT ROWID" if table.clustered and table.autoincrement is None else ""
    return f"CREATE TABLE IF NOT EXISTS {table.name} (\n    " + ",\n    ".join(parts) + f"\n){suffix}"


def index_sql(index: Index) -> str:
    unique = "UNIQUE " if index.unique else ""
    return (f"CREATE {unique}INDEX IF NOT EXISTS {index.name} ON {index.table} "
            f"({', '.join(index.columns)})")


def plugin_version(conn: sqlite3.Connection, name: str) -> int:
    row = conn.execute("SELECT version FROM plugin_schemas WHERE name = ?", (name,)).fetchone()
    return 0 if row is None else int(row[0])


async def migrate_plugin(conn: sqlite3.Connection, schema: Schema) -> int:
    """Bring a plugin's tables to its schema's version, one transaction a version."""
    version = plugin_version(conn, schema.name)
    if version > schema.version:
        raise SchemaError(f"plugin {schema.name!r}: the database's tables are version {version}, "
                          f"newer than this code's {schema.version}")
    tx = SqliteTx(conn)
    while version < schema.version:
        version += 1

        async def step(steps: Sequence[Step] = schema.versions.get(version, ()),
                       version: int = version) -> None:
            for item in steps:
                if isinstance(item, Table):
                    conn.execute(table_sql(item))
                elif isinstance(item, Index):
                    conn.execute(index_sql(item))
                else:
                    await item(tx)
            conn.execute(
                "INSERT INTO plugin_schemas (name, version) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                (schema.name, version))

        await _in_transaction(conn, step)
    return version
