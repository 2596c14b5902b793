// Events: the director's desk (create, enter, import, list an open event's results with
// Remove and Correct, close after a confirmation, what the close moved) and the events
// anyone can browse and export. Messages go next to the form the director used.

import { confirmStep } from "./desk.js";
import { $, el, plural } from "./dom.js";
import { download, eventJson, fileName, resultsCsv } from "./exports.js";
import { LobbyError } from "./lobby.js";
import { changesTable } from "./story.js";
import { watchTables } from "./tables.js";

// The names a result or an import brought to the ladder for the first time: a newcomer, or a
// misspelling the director should see at once.
function newPlayers(data) {
  const names = data.new_players || [];
  return names.length ? ` New on this ladder: ${names.join(", ")} (check the spelling: a misspelt name becomes a new player).` : "";
}

// The page's own helpers come in `ctx`; returns what the rest of the page calls.
export function setUpEvents(ctx) {
  const { lobby, act, say, soon, ratingColumn, ratingHelp, fmtValue, fmtChange, playerLink } = ctx;
  const feedbackOf = (node) => node.querySelector(".feedback");
  const DESK_FORMS = ["event-result-form", "event-import-form"];
  let openGames = null; // the chosen open event, as `event show` gives it

  // ---- directing events -----------------------------------------------------------------------

  function selectedEvent() {
    const value = $("event-select").value;
    if (!value) throw new LobbyError("bad_request", "Create or choose an open event first.");
    return Number(value);
  }

  async function loadEvents(select) {
    const { events } = await lobby.call("events", { status: "open" });
    const box = $("event-select");
    const keep = select ?? box.value;
    box.replaceChildren(...events.map((e) => el("option", { value: String(e.id) },
      `#${e.id} ${e.name} (${e.ladder}, ${e.date}, ${plural(e.games, "game")})`)));
    if (keep && events.some((e) => String(e.id) === String(keep))) box.value = String(keep);
    $("no-events").hidden = events.length > 0;
    $("event-close").disabled = events.length === 0;
    nameTheEvent();
    await loadOpenGames();
    soon("browse", loadBrowse, 0);
  }

  // The forms say which event their results go to.
  function nameTheEvent() {
    const chosen = $("event-select").selectedOptions[0];
    const event = chosen ? chosen.textContent.replace(/ \(.*$/, "") : null;
    $("result-heading").textContent = event ? `Enter a result in ${event}` : "Enter a result";
    $("import-heading").textContent = event ? `Import a results file into ${event}` : "Import a results file";
  }

  // Messages about another event, or another attempt, no longer apply.
  function clearDeskMessages() {
    for (const id of DESK_FORMS) {
      say("", "info", feedbackOf($(id)));
      $(id).querySelector(".new-confirm")?.replaceChildren();
    }
    say("", "info", $("desk-feedback"));
    $("event-log").replaceChildren();
  }

  function formArgs(form) {
    const args = {};
    for (const [k, v] of new FormData(form)) if (typeof v === "string" && v.trim()) args[k] = v.trim();
    return args;
  }

  function logEvent(...nodes) {
    $("event-log").replaceChildren(...nodes.filter((n) => n !== null && n !== undefined));
  }

  const fmtGameLength = (g) => (g.length === null || g.length === undefined ? "unlimited" : String(g.length));

  const fmtRated = (g) => (g.status === "voided" ? "voided" : g.rated ? "yes" : `no${g.unrated ? `: ${g.unrated}` : ""}`);

  // A table of an event's games; with `actions(game)` (the desk), a last column of buttons.
  function gamesTable(event, actions = null) {
    const heads = ["Match", "Date", "Side A", "Side B", "Score", "Length", "Rated", ...(actions ? ["Actions"] : [])];
    return el("div", { class: "table-wrap", role: "region", "aria-label": `Games of #${event.id} ${event.name}${actions ? " (to edit)" : ""}` },
      el("table", { class: "games-table" },
        el("caption", {}, `Games of #${event.id} ${event.name} (${plural(event.total ?? event.games.length, "game")})`),
        el("thead", {}, el("tr", {}, heads.map((t) => el("th", { scope: "col" }, t)))),
        el("tbody", {}, event.games.map((g) => el("tr", { class: g.status === "voided" ? "inactive" : null, dataset: { match: String(g.match), status: g.status } },
          el("td", { class: "num" }, String(g.match)),
          el("td", {}, g.date || event.date),
          el("td", {}, g.side_a),
          el("td", {}, g.side_b),
          el("td", { class: "num" }, `${g.score_a}–${g.score_b}`),
          el("td", { class: "num" }, fmtGameLength(g)),
          el("td", {}, fmtRated(g)),
          actions ? el("td", {}, g.status === "finished" ? actions(g) : null) : null)))));
  }

  // The chosen open event's results, each with Remove and Correct.
  async function loadOpenGames() {
    const box = $("event-games");
    const value = $("event-select").value;
    $("game-editor").replaceChildren();
    $("close-confirm").replaceChildren();
    if (!value) {
      openGames = null;
      box.replaceChildren();
      return;
    }
    const event = await lobby.callAll("event show", { event: Number(value) });
    openGames = event;
    box.replaceChildren(el("h3", { id: "event-games-heading", tabindex: "-1" }, `Results of #${event.id} ${event.name}`),
      event.games.length ? gamesTable(event, (g) => el("span", { class: "row-buttons" },
      el("button", { type: "button", class: "small secondary", "aria-label": `Remove ${g.match}`, onclick: (ev) => editGame(g, "remove", ev.currentTarget) }, "Remove"), " ",
      el("button", { type: "button", class: "small secondary", "aria-label": `Correct ${g.match}`, onclick: (ev) => editGame(g, "correct", ev.currentTarget) }, "Correct")))
      : el("p", { class: "hint" }, "No results entered yet."));
    watchTables(box);
  }

  // Remove a result (void it, with a reason) or correct it (void it, then enter the right one).
  function editGame(g, how, opener) {
    const event = openGames;
    const feedback = el("p", { class: "feedback", role: "status" });
    const field = (name, label, value, attrs = {}) => el("label", {}, label, el("input", { name, value, ...attrs }));
    const reason = field("reason", "Reason", how === "remove" ? "" : "corrected", { required: true, maxlength: "200" });
    const fields = how === "correct" ? [
      field("side_a", "Side A", g.side_a, { required: true, maxlength: "41" }),
      field("side_b", "Side B", g.side_b, { required: true, maxlength: "41" }),
      field("score_a", "Score A", String(g.score_a), { required: true, inputmode: "numeric", pattern: "[0-9]+" }),
      field("score_b", "Score B", String(g.score_b), { required: true, inputmode: "numeric", pattern: "[0-9]+" }),
      field("length", "Length", fmtGameLength(g), { maxlength: "9" }),
    ] : [];
    const form = el("form", { class: "stack-form pairs game-editor", dataset: { match: String(g.match) }, onsubmit: (ev) => {
      ev.preventDefault();
      act(async () => {
        const args = formArgs(form);
        await lobby.call("void", { match: g.match, reason: args.reason });
        let text = `Removed result ${g.match} (${g.side_a} ${g.score_a}–${g.score_b} ${g.side_b}) from event #${event.id}.`;
        if (how === "correct") {
          const { reason: _, ...game } = args;
          const corrected = (data) => `Corrected result ${g.match}: now ${data.side_a} ${data.score_a}–${data.score_b} ${data.side_b} (match ${data.match}).`;
          try {
            text = corrected(await lobby.call("event result", { event: event.id, ...game }));
          } catch (err) {
            if (!(err instanceof LobbyError) || err.code !== "new_player") throw err;
            // the wrong result is removed already; the right one names someone new: ask
            await loadEvents(event.id);
            say(`${text} The correction is not entered yet.`, "info", $("desk-feedback"));
            confirmStep($("game-editor"), err.message, "Yes, add as a new player", () => act(async () => {
              const data = await lobby.call("event result", { event: event.id, ...game, new: true });
              await loadEvents(event.id);
              say(corrected(data), "info", $("desk-feedback"));
              $("event-games-heading").focus();
            }, { where: $("desk-feedback") }), { back: $("event-games-heading"), label: "New player" });
            return;
          }
        }
        await loadEvents(event.id);
        say(text, "info", $("desk-feedback"));
        $("event-games-heading").focus();
      }, { where: feedback });
    } },
    el("h4", {}, how === "remove" ? `Remove result ${g.match}` : `Correct result ${g.match}`),
    fields, reason,
    el("div", { class: "buttons" },
      el("button", { type: "submit", class: how === "remove" ? "danger" : null }, how === "remove" ? "Remove it" : "Save the correction"),
      el("button", { type: "button", class: "secondary", onclick: () => {
        $("game-editor").replaceChildren();
        if (opener && opener.isConnected) opener.focus();
      } }, "Cancel")),
    feedback);
    $("game-editor").replaceChildren(form);
    form.querySelector("input").focus();
  }

  $("event-select").addEventListener("change", () => {
    clearDeskMessages();
    nameTheEvent();
    act(loadOpenGames, { where: $("desk-feedback") });
  });
  for (const id of DESK_FORMS) $(id).addEventListener("input", () => say("", "info", feedbackOf($(id))));

  // A form the browser refuses to send (a required field empty) is a new attempt too: the
  // message of the last one goes, so that it is not read as this one's. ("invalid" does not
  // bubble; it is caught on its way down.)
  $("admin").addEventListener("invalid", (ev) => {
    const form = ev.target.form;
    const box = form && (form.querySelector(".feedback") || form.parentElement.querySelector(":scope > .feedback"));
    if (box) box.replaceChildren();
  }, true);

  $("event-create-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = ev.target;
    act(async () => {
      const e = await lobby.call("event create", formArgs(form));
      form.reset();
      await loadEvents(e.id);
      say(`Event #${e.id} “${e.name}” is open on ${e.ladder}.`, "info", feedbackOf(form));
    }, { where: feedbackOf(form) });
  });

  // A name that has never played on the ladder is asked about first (the server refuses it
  // with `new_player` unless the request says `new`): a newcomer, or a misspelling.
  function enterResult(form, args, isNew) {
    const ask = form.querySelector(".new-confirm");
    ask.replaceChildren();
    return act(async () => {
      let data;
      try {
        data = await lobby.call("event result", { ...args, ...(isNew ? { new: true } : {}) });
      } catch (err) {
        if (!(err instanceof LobbyError) || err.code !== "new_player") throw err;
        confirmStep(ask, err.message, "Yes, add as a new player", () => enterResult(form, args, true),
          { back: form.querySelector("input"), label: "New player" });
        return;
      }
      form.reset();
      await loadEvents();
      say(`Recorded in event #${data.event}: ${data.side_a} ${data.score_a}–${data.score_b} ${data.side_b}${data.rated ? "" : " (unrated)"}.${newPlayers(data)}`, "info", feedbackOf(form));
      form.querySelector("input").focus();
    }, { where: feedbackOf(form) });
  }

  $("event-result-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = ev.target;
    act(async () => enterResult(form, { event: selectedEvent(), ...formArgs(form) }, false), { where: feedbackOf(form) });
  });

  // A file naming someone who has never played on the ladder is asked about too, as a
  // whole: the server refuses all of it with `new_player` unless the request says `new`.
  function importFile(form, event, csv, isNew) {
    const ask = form.querySelector(".new-confirm");
    ask.replaceChildren();
    return act(async () => {
      let data;
      try {
        data = await lobby.call("event import", { event, csv, ...(isNew ? { new: true } : {}) });
      } catch (err) {
        if (!(err instanceof LobbyError) || err.code !== "new_player") throw err;
        confirmStep(ask, err.message, "Yes, import with the new players", () => importFile(form, event, csv, true),
          { back: $("import-file"), label: "New players" });
        return;
      }
      form.reset();
      await loadEvents();
      say(`Imported ${plural(data.imported, "game")} into event #${data.event}.${newPlayers(data)}`, "info", feedbackOf(form));
    }, { where: feedbackOf(form) });
  }

  $("event-import-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = ev.target;
    const file = $("import-file").files[0];
    form.querySelector(".new-confirm").replaceChildren();
    act(async () => {
      const event = selectedEvent();
      if (!file) throw new LobbyError("bad_request", "Choose a CSV file to import.");
      const csv = await new Promise((resolve, reject) => {
        const reader = new FileReader();
        reader.onload = () => resolve(reader.result);
        reader.onerror = () => reject(new LobbyError("bad_request", `Could not read ${file.name}.`));
        reader.readAsText(file);
      });
      await importFile(form, event, csv, false);
    }, { where: feedbackOf(form) });
  });
  // another file chosen: the question was about the last one
  $("import-file").addEventListener("change", () => $("event-import-form").querySelector(".new-confirm").replaceChildren());

  // Closing asks first, showing what will be rated: the rated games and their players.
  $("event-close").addEventListener("click", () => act(async () => {
    const id = selectedEvent();
    const event = await lobby.callAll("event show", { event: id });
    const rated = event.games.filter((g) => g.status === "finished" && g.rated);
    const players = [...new Set(rated.flatMap((g) => [...g.side_a.split("+"), ...g.side_b.split("+")]))].sort();
    const confirm = el("button", { type: "button", class: "danger", onclick: () => act(() => closeEvent(id), { where: $("desk-feedback") })
      .then(() => { if (!$("close-confirm").contains(document.activeElement) && document.activeElement === document.body) $("event-close").focus(); }) },
      `Yes, close #${id} and rate it`);
    $("close-confirm").replaceChildren(el("div", { class: "confirm", role: "group", "aria-label": `Close event #${id}` },
      el("p", { class: "notice" }, `Closing #${id} ${event.name} rates ${plural(rated.length, "game")} on ${event.ladder} `
        + `for ${plural(players.length, "player")}: ${players.join(", ") || "nobody"}. `
        + "Results cannot be removed or corrected once it is closed."),
      rated.length < event.games.length ? el("p", { class: "hint" }, `${plural(event.games.length - rated.length, "game")} voided or unrated will not count.`) : null,
      el("div", { class: "buttons" }, confirm,
        el("button", { type: "button", class: "secondary", onclick: () => {
          $("close-confirm").replaceChildren();
          $("event-close").focus();
        } }, "Cancel"))));
    confirm.focus();
  }, { where: $("desk-feedback") }));

  async function closeEvent(id) {
    const data = await lobby.call("event close", { event: id });
    $("close-confirm").replaceChildren();
    await loadEvents();
    const column = ratingColumn(data.ladder);
    const others = data.changes.filter((c) => c.played === false).length;
    logEvent(el("h3", { id: "close-summary-heading", tabindex: "-1" }, `Event #${data.id} “${data.name}” closed`),
      data.changes.length
        ? el("ul", { class: "plain-list close-changes" }, data.changes.map((c) => el("li", { dataset: { player: c.player, played: String(c.played !== false) } },
          playerLink(c.player), c.before === null || c.before === undefined
            ? `: new, ${fmtValue(column, c.after)} `
            : `: ${fmtValue(column, c.before)} → ${fmtValue(column, c.after)} (${fmtChange(column, c.change)}) `,
          el("span", { class: `tag ${c.played === false ? "moved-only" : "played"}` }, c.played === false ? "moved by normalisation" : "played"))))
        : el("p", { class: "hint" }, "No ratings changed."),
      others ? ratingHelp(data.ladder) : null);
    say(`Event #${data.id} closed; ${data.ladder} is rated${others ? ` (${plural(others, "player")} moved without playing)` : ""}.`, "info", $("desk-feedback"));
    $("close-summary-heading").focus();
    $("close-area").scrollIntoView({ block: "nearest" });
  }

  // ---- browsing events (everyone) -------------------------------------------------------------

  async function loadBrowse() {
    const { events } = await lobby.call("events");
    const box = $("browse-event");
    const keep = box.value;
    const shown = [...events].reverse(); // newest first
    box.replaceChildren(el("option", { value: "" }, "Choose an event"), ...shown.map((e) => el("option", { value: String(e.id) },
      `#${e.id} ${e.name} (${e.ladder}, ${e.date}, ${e.status}, ${plural(e.games, "game")})`)));
    if (keep && events.some((e) => String(e.id) === keep)) box.value = keep;
    $("no-browse-events").hidden = events.length > 0;
  }

  async function showBrowsed() {
    const value = $("browse-event").value;
    const body = $("browse-body");
    if (!value) {
      body.replaceChildren();
      return;
    }
    const event = await lobby.callAll("event show", { event: Number(value) });
    const base = fileName(event.name, event.date);
    body.replaceChildren(
      el("p", { class: "hint" }, `${event.name} on ${event.ladder}, ${event.date}: ${event.status}.`),
      el("div", { class: "buttons exports" }, el("span", {}, "Export:"),
        el("button", { type: "button", class: "small secondary", onclick: () => download(`${base}.csv`, resultsCsv(event), "text/csv") }, "Results file (CSV)"),
        el("button", { type: "button", class: "small secondary", onclick: () => download(`${base}.json`, eventJson(event), "application/json") }, "JSON")),
      event.games.length ? gamesTable(event) : el("p", { class: "hint" }, "No games."),
      changesTable(event, { column: ratingColumn(event.ladder), fmtValue, fmtChange, playerLink }),
      event.standings.length ? el("div", { class: "table-wrap", role: "region", "aria-label": `Standings of ${event.name}` },
        el("table", { class: "standings-table" },
          el("caption", {}, "Standings"),
          el("thead", {}, el("tr", {}, ["Player", "Played", "Won", "Drawn", "Lost", "Points"].map((t) => el("th", { scope: "col" }, t)))),
          el("tbody", {}, event.standings.map((r) => el("tr", { dataset: { player: r.player } },
            el("th", { scope: "row" }, playerLink(r.player)),
            ...[r.played, r.won, r.drawn, r.lost, r.points].map((v) => el("td", { class: "num" }, String(v)))))))) : null);
    watchTables(body);
  }

  $("browse-event").addEventListener("change", () => act(showBrowsed));

  return { loadEvents, loadBrowse };
}
