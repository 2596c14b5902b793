"""Command handlers, one module per area; importing this registers them all."""

from server.handlers import accounts, events, matches, queries  # noqa: F401
