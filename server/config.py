"""Server configuration from a TOML file, with the defaults of DESIGN.md."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.api import LadderConfig
from server.api.registry import RegistryError, plugin_factories, rating_systems


class ConfigError(ValueError):
    pass


DEFAULT_LADDERS: tuple[dict[str, Any], ...] = (
    {"name": "backgammon", "system": "fibs"},
    {"name": "scrabble", "system": "cas"},
    {"name": "foosball-singles", "system": "p4p"},
    {"name": "foosball-doubles", "system": "p4p", "format": "doubles"},
)


def default_ladders() -> tuple[LadderConfig, ...]:
    return tuple(ladder_config(e, "the default ladders") for e in DEFAULT_LADDERS)


def ladder_config(entry: dict[str, Any], where: str) -> LadderConfig:
    """A ``[[ladders]]`` entry: its name, and its options as the system it names parses them."""
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: a ladder needs a name")
    try:
        systems = rating_systems()
    except RegistryError as e:
        raise ConfigError(f"{where}: {e}") from None
    system = systems.get(entry.get("system"))  # type: ignore[arg-type]
    if system is None:
        raise ConfigError(f"{where} ({name}): unknown rating system {entry.get('system')!r}; "
                          f"installed: {', '.join(sorted(systems))}")
    table = {k: v for k, v in entry.items() if k not in ("name", "system")}
    unknown = set(table) - system.option_keys()
    if unknown:
        named = ", ".join(repr(k) for k in sorted(unknown))
        keys = ", ".join(sorted(system.option_keys() | {"name", "system"}))
        raise ConfigError(f"{where} ({name}): unknown key{'s' if len(unknown) > 1 else ''} "
                          f"{named} for a ladder of system {system.name!r}; its keys: {keys}")
    try:
        options = system.parse_options(table)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where} ({name}): {e}") from None
    return LadderConfig(name, system, options, table)


@dataclass(frozen=True)
class PasswordHashing:
    """scrypt cost; the defaults are OWASP's minimum (N=2^17, r=8, p=1)."""

    n: int = 2**17
    r: int = 8
    p: int = 1


@dataclass(frozen=True)
class Limits:
    """Abuse limits, all configurable in ``[limits]``; the defaults suit a public server."""

    max_message: int = 64 * 1024
    messages_per_second: float = 20.0
    burst: int = 60
    strikes: int = 20
    connections_per_address: int = 64
    max_connections: int = 0  # 0: as many as the open-file limit leaves room for
    idle_timeout: float = 3600.0
    outgoing_queue: int = 1024
    outgoing_bytes: int = 1024 * 1024
    # Each connection's kernel send buffer (SO_SNDBUF; 0: the kernel's own, growing to
    # net.ipv4.tcp_wmem's maximum, ~3 MB queued for a peer that does not read).
    send_buffer: int = 64 * 1024
    ping_interval: float = 20.0
    ping_timeout: float = 20.0
    login_free_failures: int = 5
    login_address_failures: int = 20
    login_account_failures: int = 100
    login_max_delay: float = 300.0
    registrations_per_hour: int = 10
    # Successful logins and resumes a minute, per account and per address (0: no limit).
    account_logins_per_minute: int = 20
    address_logins_per_minute: int = 60
    sessions_per_account: int = 20  # session tokens kept per account, the oldest ended first
    presence_interval: float = 1.0  # seconds between two presence pushes to a connection
    password_hash_slots: int = 2
    password_hash_queue: int = 64
    invitations_per_minute: int = 10  # sent by one player, to anyone
    invitations_per_pair_per_minute: int = 3  # from one player to the same player
    invitations_received_per_minute: int = 20  # to one player, from anyone
    # Tells and says a minute, per player and per address; shouts, which reach everyone, apart.
    talk_per_minute: int = 30
    talk_address_per_minute: int = 120
    shouts_per_minute: int = 5
    shouts_address_per_minute: int = 20
    # What one address (an IPv6 /64) may have read, over all its connections: units of about
    # one small read (server/lobby/reads.py); 0: no limit.
    read_units_per_second: float = 100.0
    read_units_burst: float = 600.0
    origins: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tls:
    certificate: str | None = None
    key: str | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.certificate and self.key)


@dataclass(frozen=True)
class MetricsSettings:
    """``[metrics]``: where Prometheus reads the metrics (``None``: nowhere, the default)."""

    address: str | None = None

    @property
    def host_port(self) -> tuple[str, int]:
        assert self.address is not None
        return split_address(self.address)


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as host and port; ``ValueError`` if it is not."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{address!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{address!r}: write an IPv6 address in brackets, [::1]:PORT")
    return host, int(port)


@dataclass(frozen=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 8765
    database: str = "matchlobby.db"
    drop_timeout: float = 600.0
    invitation_timeout: float = 300.0  # seconds an invitation stands (0: until answered)
    session_days: float = 30.0  # how long a login's session token resumes it
    server_name: str = "matchlobby"
    node: str = ""  # this process's name among the nodes of one database ("": host-pid)
    seek_range: int = 100  # automatch: how far from one's rating a seek looks, unless told
    seek_widen_points: float = 50.0  # ... and how much farther every seek_widen_seconds
    seek_widen_seconds: float = 10.0
    ladders: tuple[LadderConfig, ...] = field(default_factory=default_ladders)
    password: PasswordHashing = field(default_factory=PasswordHashing)
    commit_batch: int = 64
    compression: bool = False
    # Before serve and user add open the database: "quick" also runs PRAGMA quick_check
    # (reads the whole file: ~3-4 s per 500 MB); "schema" checks only the header, version
    # and schema.
    startup_check: str = "quick"
    shutdown_grace: float = 10.0  # seconds a stop waits for the commands in flight (SIGTERM)
    limits: Limits = field(default_factory=Limits)
    tls: Tls = field(default_factory=Tls)
    logging: LogSettings = field(default_factory=lambda: LogSettings())
    metrics: MetricsSettings = field(default_factory=MetricsSettings)

    plugins: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def node_name(self) -> str:
        """This process's name among the lobby's nodes: ``node``, or the host and the pid."""
        return self.node or f"{socket.gethostname()}-{os.getpid()}"

    def ladder(self, name: str) -> LadderConfig | None:
        for ladder in self.ladders:
            if ladder.name == name:
                return ladder
        return None


SERVER_KEYS = {"host", "port", "database", "drop_timeout", "name", "commit_batch", "compression",
               "startup_check", "invitation_timeout", "session_days", "node", "seek_range",
               "seek_widen_points", "seek_widen_seconds",
               "shutdown_grace"}
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,62}")
STARTUP_CHECKS = ("quick", "schema")


def _installed_plugins(tables: dict[str, Any], where: str) -> None:
    """Every ``[plugins.NAME]`` names an installed plugin: a misspelt name is refused when the
    file is read, by every sub-command alike, rather than met later as a plugin left unset."""
    try:
        installed = plugin_factories()
    except RegistryError as e:
        raise ConfigError(f"{where}: {e}") from None
    unknown = sorted(set(tables) - set(installed))
    if unknown:
        named = ", ".join(f"[plugins.{name}]" for name in unknown)
        raise ConfigError(f"{where}: {named} name{'s' if len(unknown) == 1 else ''} no installed "
                          f"plugin; installed: {', '.join(installed) or 'none'}")


def load_config(path: str | Path | None) -> Config:
    """Read ``path`` (or return the defaults when it is ``None``)."""
    if path is None:
        return Config()
    try:
        with open(path, "rb") as f:
            raw = f.read()
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line} is not UTF-8 text (byte 0x{raw[e.start]:02x}); "
                          "TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None
    unknown = set(data) - {"server", "ladders", "password_hashing", "limits", "tls", "plugins",
                           "logging", "metrics"}
    if unknown:
        raise ConfigError(f"{path}: unknown section(s) {sorted(unknown)}")
    server = data.get("server", {})
    bad_keys = set(server) - SERVER_KEYS
    if bad_keys:
        raise ConfigError(f"{path}: [server] has unknown key(s) {sorted(bad_keys)}")
    kwargs: dict[str, Any] = {}
    for key, conv in (("host", str), ("port", int), ("database", str), ("drop_timeout", float),
                      ("commit_batch", int)):
        if key in server:
            kwargs[key] = conv(server[key])
    for key in ("invitation_timeout", "session_days", "seek_widen_points", "seek_widen_seconds"):
        if key in server:
            kwargs[key] = _seconds_or_days(server[key], key, str(path))
    if "shutdown_grace" in server:
        kwargs["shutdown_grace"] = _seconds_or_days(server["shutdown_grace"], "shutdown_grace",
                                                    str(path))
    if "seek_range" in server:
        kwargs["seek_range"] = int(_seconds_or_days(server["seek_range"], "seek_range", str(path)))
    if "compression" in server:
        kwargs["compression"] = bool(server["compression"])
    if "name" in server:
        kwargs["server_name"] = str(server["name"])
    if "node" in server:
        node = server["node"]
        if not isinstance(node, str) or not NODE_NAME.fullmatch(node):
            raise ConfigError(f"{path}: [server] node must be 1 to 63 letters, digits and . _ : - "
                              "(starting with a letter or digit)")
        kwargs["node"] = node
    if "startup_check" in server:
        if server["startup_check"] not in STARTUP_CHECKS:
            raise ConfigError(f"{path}: [server] startup_check must be one of "
                              f"{', '.join(STARTUP_CHECKS)}")
        kwargs["startup_check"] = server["startup_check"]
    if "ladders" in data:
        ladders = tuple(ladder_config(e, f"{path}: ladders[{i}]")
                        for i, e in enumerate(data["ladders"]))
        names = [x.name.casefold() for x in ladders]
        if len(set(names)) != len(names):
            raise ConfigError(f"{path}: ladder names must be unique (ignoring case: players "
                              "may type them in any case)")
        kwargs["ladders"] = ladders
    if "password_hashing" in data:
        ph = data["password_hashing"]
        kwargs["password"] = PasswordHashing(int(ph.get("n", 2**17)), int(ph.get("r", 8)),
                                             int(ph.get("p", 1)))
    if "limits" in data:
        kwargs["limits"] = _limits(data["limits"], str(path))
    if "plugins" in data:
        plugins = data["plugins"]
        if not isinstance(plugins, dict) or not all(isinstance(v, dict) for v in plugins.values()):
            raise ConfigError(f"{path}: [plugins] holds one table per plugin: [plugins.NAME]")
        _installed_plugins(plugins, str(path))
        kwargs["plugins"] = plugins
    if "tls" in data:
        tls = data["tls"]
        bad = set(tls) - {"certificate", "key"}
        if bad or not tls.get("certificate") or not tls.get("key"):
            raise ConfigError(f"{path}: [tls] needs exactly 'certificate' and 'key'")
        kwargs["tls"] = Tls(str(tls["certificate"]), str(tls["key"]))
    if "logging" in data:
        kwargs["logging"] = log_settings(data["logging"], str(path))
    if "metrics" in data:
        kwargs["metrics"] = _metrics(data["metrics"], str(path))
    return Config(**kwargs)


def _metrics(table: Any, path: str) -> MetricsSettings:
    if not isinstance(table, dict) or set(table) - {"address"}:
        raise ConfigError(f"{path}: [metrics] takes only address = \"HOST:PORT\"")
    address = table.get("address")
    if address is None:
        return MetricsSettings()
    if not isinstance(address, str):
        raise ConfigError(f"{path}: [metrics] address must be a string, \"HOST:PORT\"")
    try:
        split_address(address)
    except ValueError as e:
        raise ConfigError(f"{path}: [metrics] address: {e}") from None
    return MetricsSettings(address)


def _seconds_or_days(value: Any, key: str, path: str) -> float:
    """``invitation_timeout`` (0 allowed: never), automatch's ``seek_*`` (0 allowed) or
    ``session_days`` (more than 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{path}: [server] {key} must be a number")
    if value < 0 or (key == "session_days" and value == 0):
        raise ConfigError(f"{path}: [server] {key} must be "
                          f"{'more than 0' if key == 'session_days' else 'at least 0'}")
    return float(value)


def _limits(table: dict[str, Any], path: str) -> Limits:
    known = {f.name: f for f in dataclasses.fields(Limits)}
    bad = set(table) - set(known)
    if bad:
        raise ConfigError(f"{path}: [limits] has unknown key(s) {sorted(bad)}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        default = getattr(Limits(), key)
        try:
            if isinstance(default, tuple):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError("a list of strings")
                values[key] = tuple(value)
            else:
                whole = isinstance(default, int)
                if isinstance(value, bool) or not isinstance(value, int | float) or (
                        whole and not isinstance(value, int)) or value < 0:
                    raise ValueError(f"{'a whole number' if whole else 'a number'} that is not "
                                     f"negative, not {value!r}")
                values[key] = type(default)(value)
        except ValueError as e:
            raise ConfigError(f"{path}: [limits] {key}: expected {e}") from None
    return Limits(**values)


LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
LOG_FORMATS = ("text", "json")


@dataclass(frozen=True)
class LogSettings:
    """``[logging]``: the format of the server's log lines, the root level and each named
    logger's own (``[logging.levels]``)."""

    format: str = "text"
    level: str = "info"
    levels: tuple[tuple[str, str], ...] = ()


def log_settings(table: Any, path: str) -> LogSettings:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [logging] must be a table")
    bad = set(table) - {"format", "level", "levels"}
    if bad:
        raise ConfigError(f"{path}: [logging] has unknown key(s) {sorted(bad)}")
    form = table.get("format", "text")
    if form not in LOG_FORMATS:
        raise ConfigError(f"{path}: [logging] format must be one of {', '.join(LOG_FORMATS)}, "
                          f"not {form!r}")
    levels = table.get("levels", {})
    if not isinstance(levels, dict):
        raise ConfigError(f"{path}: [logging.levels] maps logger names to levels, such as "
                          "\"server.net.transport\" = \"debug\"")
    return LogSettings(form, _log_level(table.get("level", "info"), "[logging] level", path),
                       tuple(sorted((str(name), _log_level(level, f"[logging.levels] {name!r}",
                                                           path))
                                    for name, level in levels.items())))


def _log_level(value: Any, where: str, path: str) -> str:
    level = value.lower() if isinstance(value, str) else value
    if level not in LOG_LEVELS:
        raise ConfigError(f"{path}: {where}: {value!r} is not a log level; use one of "
                          f"{', '.join(LOG_LEVELS)}")
    return str(level)
