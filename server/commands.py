"""The lobby's own commands, and the table that joins them with the ones plugins add.

The parser, the help text, the role check and the authorization tests are all
made from a :class:`CommandTable`, so a command cannot exist without its row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from server.api.commands import ADMIN, ANYONE, PLAYER, ROLES, Arg, CommandSpec, Flag
from server.api.paging import EVENT_PAGE

SHOUTS_KEPT = 100  # the shouts the database keeps, the latest
SHOUTS_SHOWN = 20  # what ``shouts`` answers unless asked for more

__all__ = ["ADMIN", "ANYONE", "COMMANDS", "PLAYER", "ROLES", "Arg", "CommandSpec", "CommandTable",
           "Flag"]


def _c(name: str, role: str, summary: str, *args: Arg, flags: tuple[Flag, ...] = (),
       read_only: bool = False) -> CommandSpec:
    return CommandSpec(name, role, summary, args, flags, read_only)


COMMANDS: dict[str, CommandSpec] = {  # the lobby's own, in help's order
    c.name: c
    for c in (
        _c("help", ANYONE, "List the commands, or explain one.", Arg("command", "text", True),
           read_only=True),
        _c("register", ANYONE, "Create an account and log in. Names are 1–20 of A-Z a-z 0-9 _ -.",
           Arg("name", "name"), Arg("password", "password")),
        _c("login", ANYONE, "Log in; a second login of the same account replaces the first.",
           Arg("name", "name"), Arg("password", "password")),
        _c("resume", ANYONE, "Log in again with the session token a login gave, without the "
                             "password (until it expires or you log out).",
           Arg("token", "text")),
        _c("logout", PLAYER, "Log out, ending this login's session (--all: all of yours; "
                             "--others: all but this one).",
           flags=(Flag("all"), Flag("others"))),
        _c("who", ANYONE, "Online players with their status and ratings; from then on, "
                          "presence pushes tell who comes and goes.",
           read_only=True),
        _c("whois", ANYONE, "A player's profile: status, every ladder's rating, matches.",
           Arg("name", "name"), read_only=True),
        _c("watch", ANYONE, "Receive ladder_updated and rating_changed pushes for a ladder.",
           Arg("ladder", "ladder")),
        _c("unwatch", ANYONE, "Stop watching a ladder.", Arg("ladder", "ladder")),
        _c("tell", PLAYER, "Say TEXT to one player, wherever they are.",
           Arg("name", "name"), Arg("text", "message")),
        _c("say", PLAYER, "Say TEXT to your opponent in your live match.",
           Arg("text", "message")),
        _c("shout", PLAYER, f"Say TEXT to everyone (the last {SHOUTS_KEPT} are kept).",
           Arg("text", "message")),
        _c("shouts", ANYONE, f"The latest COUNT shouts ({SHOUTS_SHOWN} unless said, at most "
                             f"{SHOUTS_KEPT}).",
           Arg("count", "count", True), read_only=True),
        _c("block", PLAYER, "Block NAME's tells, says and invitations; alone: whom you block.",
           Arg("name", "name", True)),
        _c("unblock", PLAYER, "Hear a player you blocked again.", Arg("name", "name")),
        _c("mute", ADMIN, "Stop a player talking, for MINUTES or until unmuted.",
           Arg("name", "name"), Arg("minutes", "count", True)),
        _c("unmute", ADMIN, "Let a muted player talk again.", Arg("name", "name")),
        _c("stake", PLAYER, "What a match against a player would put at stake: both ratings, "
                            "win chances, and the change for a win or a loss.",
           Arg("name", "name"), Arg("ladder", "ladder"), Arg("length", "length", True),
           read_only=True),
        _c("invite", PLAYER, "Invite a player to a match of LENGTH points (unlimited = unrated); "
                             "inviting them again replaces it.",
           Arg("name", "name"), Arg("ladder", "ladder"), Arg("length", "length", True)),
        _c("invitations", PLAYER, "Your invitations: those you sent and those you received.",
           read_only=True),
        _c("uninvite", PLAYER, "Withdraw your invitation to a player.", Arg("name", "name")),
        _c("join", PLAYER, "Accept an invitation; the match starts.", Arg("name", "name")),
        _c("decline", PLAYER, "Refuse an invitation.", Arg("name", "name")),
        _c("resign", PLAYER, "Concede your match: the opponent wins and it is rated now."),
        _c("ready on", PLAYER, "Take invitations again (the default at each login)."),
        _c("ready off", PLAYER, "Take no invitations for now: nobody can invite you, and who "
                                "shows you as not ready."),
        _c("seek", PLAYER, "Look for an opponent near your rating on a live ladder (LENGTH "
                           "points; --range POINTS from your rating, widening while you wait); "
                           "the match starts once one is found. A new seek replaces yours.",
           Arg("ladder", "ladder"), Arg("length", "length", True),
           flags=(Flag("range", "count", value="points"),)),
        _c("unseek", PLAYER, "Stop looking for an opponent."),
        _c("seeks", ANYONE, "Who is looking for an opponent, on every ladder or one.",
           Arg("ladder", "ladder", True), read_only=True),
        _c("report win", PLAYER, "Report a win; SCORE_A is yours and SCORE_B your opponent's "
                                 "(both or none), whichever side you are. The opponent "
                                 "confirms or disputes.",
           Arg("score_a", "score", True), Arg("score_b", "score", True)),
        _c("confirm", PLAYER, "Accept the opponent's reported win; the match is rated now.",
           Arg("match", "id")),
        _c("dispute", PLAYER, "Reject the opponent's reported win; an admin decides.",
           Arg("match", "id")),
        _c("claim", PLAYER, "Win a match whose opponent has been disconnected too long.",
           Arg("match", "id")),
        _c("abort", PLAYER, "Propose (or agree) to end your match unrated."),
        _c("event create", ADMIN, "Open an event on a ladder (DATE defaults to today); NAME is "
                                  "up to 100 characters, without control or invisible ones.",
           Arg("name", "title"), Arg("ladder", "ladder"), Arg("date", "date", True)),
        _c("event result", ADMIN, "Record a game; a side is NAME or NAME1+NAME2; a name that "
                                  "has never played on the ladder needs --new (a misspelling "
                                  "is refused); REASON is up to 200 characters, without "
                                  "control or invisible ones.",
           Arg("event", "id"), Arg("side_a", "side"), Arg("side_b", "side"),
           Arg("score_a", "score"), Arg("score_b", "score"), Arg("length", "length", True),
           flags=(Flag("unrated", "reason"), Flag("new"))),
        _c("event import", ADMIN, "Record many games from CSV text (the results-file format), "
                                  "all or nothing; names that have never played on the ladder "
                                  "need --new (a misspelling is refused).",
           Arg("event", "id"), Arg("csv", "csv"), flags=(Flag("new"),)),
        _c("event close", ADMIN, "Close the event and rate its games; pushes the new ladder.",
           Arg("event", "id")),
        _c("events", ANYONE, "List events, optionally only open or closed ones.",
           Arg("status", "status", True), read_only=True),
        _c("event show", ANYONE, "An event's games and standings: COUNT (all) of each from "
                                 f"FROM, at most {EVENT_PAGE} a reply; 'next' asks for the rest.",
           Arg("event", "id"), Arg("from", "count", True), Arg("count", "count", True),
           read_only=True),
        _c("disputes", ADMIN, "The disputed live matches waiting for an admin's decision "
                              "(adjudicate or void), their players online or not.",
           read_only=True),
        _c("void", ADMIN, "Void a match; its ladder is recomputed from the log. REASON is up to "
                          "200 characters, without control or invisible ones.",
           Arg("match", "id"), Arg("reason", "reason")),
        _c("adjudicate", ADMIN, "Decide a disputed match, or correct a result; recomputes the ladder.",
           Arg("match", "id"), Arg("winner", "name")),
        _c("player remove", ADMIN, "Remove a name entered with results by mistake; refused "
                                   "while a result that is not voided names it.",
           Arg("name", "name")),
        _c("ban", ADMIN, "Keep a player out: their connection is closed and their logins are "
                         "refused until DATE begins (UTC), or until unbanned. REASON, the "
                         "rest of the line (up to 200 characters), is shown to them.",
           Arg("name", "name"), Arg("reason", "text", True), flags=(Flag("until", "date"),)),
        _c("unban", ADMIN, "Let a banned player log in again.", Arg("name", "name")),
    )
}



class CommandTable(Mapping[str, CommandSpec]):
    """Every command a lobby answers: its own, then each plugin's, in ``help``'s order."""

    def __init__(self, specs: Iterable[CommandSpec]) -> None:
        self.specs: dict[str, CommandSpec] = {}
        for spec in specs:
            if spec.name in self.specs:
                raise ValueError(f"two commands are named {spec.name!r}")
            if spec.name != " ".join(spec.name.lower().split()):
                raise ValueError(f"command names are lower case words: {spec.name!r}")
            self.specs[spec.name] = spec
        self.groups = frozenset(name.split()[0] for name in self.specs if " " in name)

    def __getitem__(self, name: str) -> CommandSpec:
        return self.specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def subcommands(self, group: str) -> list[str]:
        return sorted(c.split()[1] for c in self.specs if c.split()[0] == group)

