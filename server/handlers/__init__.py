"""The lobby's own command handlers, one module per area, in one explicit table."""

from __future__ import annotations

from server.handlers import accounts, corrections, disputes, events, matches, players, queries, seeks, talk
from server.handlers import bans as account_bans
from server.lobby.router import Handler

HANDLERS: dict[str, Handler] = {
    **accounts.HANDLERS,
    **queries.HANDLERS,
    **matches.HANDLERS,
    **events.HANDLERS,
    **corrections.HANDLERS,
    **disputes.HANDLERS,
    **talk.HANDLERS,
    **players.HANDLERS,
    **seeks.HANDLERS,
    **account_bans.HANDLERS,
}
