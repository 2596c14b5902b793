"""The lobby server: transport, protocol, commands, matches, events, accounts, storage."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 2
