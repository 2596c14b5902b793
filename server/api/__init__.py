"""The plugin API: the whole contract between the lobby and the code it hosts.

It imports nothing of the project outside this package. Plugins and rating
systems import it and nothing else of the server; the server uses it to find
them (:mod:`server.api.registry`) and to talk to them.
"""

from server.api import rules
from server.api.commands import (
    ADMIN,
    ANYONE,
    PLAYER,
    Arg,
    CliCommand,
    CliEnvironment,
    CommandContext,
    CommandError,
    CommandSpec,
    Flag,
    PluginCommand,
)
from server.api.events import DomainEvent, EventClosed, LadderCorrected, MatchFinished
from server.api.plugin import LobbyPlugin, PluginSetup
from server.api.plugin_base import PluginBase
from server.api.publish import Data, Publisher
from server.api.rating import (
    Book,
    Column,
    HistoryPair,
    LadderConfig,
    LogRow,
    NotPlain,
    PlainReplay,
    RatingSystem,
    Standing,
    StoredStanding,
)
from server.api.records import NAME_RULE, Game, RatedUnit, valid_name
from server.api.storage import (
    LOG_TABLES,
    Index,
    LogReader,
    Reader,
    Row,
    Schema,
    Store,
    Table,
    TableColumn,
    Tx,
)
from server.api.systems import (
    BookBase,
    FastReplay,
    HistoryLoading,
    LadderOptions,
    LiveOutcomes,
    SharedField,
    StandingBase,
    SystemBase,
    TailCorrections,
)

__all__ = [
    "ADMIN", "ANYONE", "LOG_TABLES", "NAME_RULE", "PLAYER", "Arg", "Book", "CliCommand",
    "CliEnvironment", "Column", "CommandContext", "CommandError", "CommandSpec", "Data",
    "DomainEvent", "EventClosed", "Flag", "Game", "HistoryPair", "Index", "LadderConfig",
    "LadderCorrected", "LobbyPlugin", "LogReader", "LogRow", "MatchFinished", "NotPlain",
    "PlainReplay", "PluginCommand", "PluginSetup", "Publisher", "RatedUnit", "RatingSystem",
    "Reader", "Row", "Schema", "Standing", "Store", "StoredStanding", "Table", "TableColumn", "Tx",
    "valid_name",
]
__all__ += ["PluginBase"]
__all__ += [
    "BookBase", "FastReplay", "HistoryLoading", "LadderOptions", "LiveOutcomes", "SharedField",
    "StandingBase", "SystemBase", "TailCorrections", "rules",
]
