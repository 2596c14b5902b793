"""SIGHUP: read the configuration file again and apply what can change while serving.

The whole file is checked first (a broken one, or a certificate that does not load,
changes nothing). Then the limits (open connections take them at their next frame),
the browser origins allowed, the log's format and levels, the TLS certificate (for new
handshakes), and the ``[server]`` values read at each use (``drop_timeout``,
``session_days``, ``seek_range``) take effect; every other changed key is logged at
WARNING as needing a restart, and keeps its running value.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server import logsetup
from server.config import Config, ConfigError, Limits, Tls, load_config
from server.store.backends import is_postgres

if TYPE_CHECKING:
    from server.app import RunningServer

log = logging.getLogger("matchlobby.reload")

LIVE_SERVER_KEYS = ("drop_timeout", "session_days", "seek_range")
"""``[server]`` values the lobby reads where it uses them (``lobby.config``)."""
LIMITS_AT_START = ("max_connections", "send_buffer", "ping_interval", "ping_timeout",
                   "password_hash_slots", "password_hash_queue")
"""``[limits]`` given to what is built once, at start."""
CONFIG_NAMES = {"server_name": "server.name", "password": "password_hashing"}
"""Config fields under another name in the file (the others: ``[server]``'s key or a table)."""

CommandLine = Callable[[Config], Config]
"""The file's configuration with what ``serve``'s command line sets instead (``--db``, ...)."""

_path: str | None = None
_command_line: CommandLine | None = None


def prepare(path: str | None, command_line: CommandLine | None = None) -> None:
    """The file ``serve`` was started with, and what its command line sets instead. Until
    the server listens (and :func:`on_hangup` is the handler), a SIGHUP is ignored rather
    than ending the process, as it would by default."""
    global _path, _command_line
    _path, _command_line = path, command_line
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def node_shown(config: Config) -> str | None:
    """The node's name for the log's lines, when several nodes may share the database."""
    return config.node_name if is_postgres(config.database) else None


def on_hangup(server: RunningServer) -> None:
    """The SIGHUP handler: reload, or say why nothing was."""
    if _path is None:
        log.warning("SIGHUP: the server was started without --config; nothing to reload")
        return
    reload_file(server, _path, _command_line)


def reload_file(server: RunningServer, path: str, command_line: CommandLine | None = None
                ) -> None:
    """Read ``path`` (with what the command line sets instead, if given), check it whole,
    and apply it; a file that does not pass changes nothing."""
    try:
        new = load_config(path)
        if command_line is not None:
            new = command_line(new)
        _check_tls(new.tls)
    except ConfigError as e:
        log.error("SIGHUP: %s; nothing was changed", e)
        return
    apply(server, new, path)


def _check_tls(tls: Tls) -> None:
    """Raise ``ConfigError`` when the certificate and key would not load."""
    if not tls.enabled:
        return
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(tls.certificate or "",
                                                                             tls.key)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"[tls] certificate {tls.certificate}, key {tls.key}: "
                          f"{' '.join(str(e).split())}") from None


def apply(server: RunningServer, new: Config, path: str) -> None:
    """Apply ``new`` (already checked) to the running server, as far as it can be."""
    old = server.config
    live: dict[str, Any] = {key: getattr(new, key) for key in LIVE_SERVER_KEYS}
    limits = new.limits
    at_start = {key: getattr(old.limits, key) for key in LIMITS_AT_START
                if getattr(new.limits, key) != getattr(old.limits, key)}
    if at_start:
        limits = dataclasses.replace(limits, **at_start)
        for key in at_start:
            log.warning("SIGHUP: limits.%s changed; it takes effect at the next restart", key)
    live["limits"] = limits
    if new.logging != old.logging:
        logsetup.configure(new.logging, node_shown(old))
        live["logging"] = new.logging
    context = server.transport.ssl_context
    if old.tls.enabled and new.tls.enabled and context is not None:
        try:  # the same context: new handshakes present the new certificate
            context.load_cert_chain(new.tls.certificate or "", new.tls.key)
            live["tls"] = new.tls
        except (OSError, ssl.SSLError) as e:
            log.error("SIGHUP: the TLS certificate was not reloaded (%s)", e)
    if limits != old.limits:
        server.transport.reconfigure(limits)
        server.lobby.presence.interval = limits.presence_interval
        server.lobby.use_limits(limits, old.limits)
    for field in dataclasses.fields(Config):
        name = field.name
        if name not in live and getattr(new, name) != getattr(old, name):
            log.warning("SIGHUP: %s changed; it takes effect at the next restart",
                        CONFIG_NAMES.get(name, name))
    changed = [k for k, v in live.items() if v != getattr(old, k) and k != "limits"]
    changed += [f"limits.{f.name}" for f in dataclasses.fields(Limits)
                if getattr(limits, f.name) != getattr(old.limits, f.name)]
    if "tls" in live:
        changed.append("the TLS certificate")
    server.config = server.lobby.config = dataclasses.replace(old, **live)
    log.info("SIGHUP: configuration %s read again%s", path,
             f"; applied: {', '.join(changed)}" if changed else "; nothing to apply")
