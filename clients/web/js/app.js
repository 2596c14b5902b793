// The lobby's web page: live ladders, player profiles with rating charts,
// playing matches and directing events. All text reaches the DOM through
// text nodes (el/append), never through innerHTML.

import { Alerts } from "./alerts.js";
import { chartTimes, whenText } from "./charts.js";
import { setUpDesk } from "./desk.js";
import { $, el, fmtExpiry, plural } from "./dom.js";
import { setUpDisputes } from "./disputes.js";
import { evaluationPanel } from "./evaluation.js";
import { setUpEvents } from "./events.js";
import { download, fileName, historyCsv, historyJson } from "./exports.js";
import { Lobby, LobbyError, lobbyUrl, restartWait } from "./lobby.js";
import { setUpSeek } from "./seek.js";
import { setUpPlay } from "./play.js";
import { setUpPluginCommands } from "./plugin_commands.js";
import { forgetSession, saveSession, savedSession } from "./session.js";
import { stakeTable } from "./stake.js";
import { historyTable } from "./story.js";
import { watchTables } from "./tables.js";
import { setUpTalk } from "./talk.js";

const HIGHLIGHT_MS = 4000;
const lobby = new Lobby(lobbyUrl());
const alerts = new Alerts();
const state = {
  me: null,
  role: null,
  token: null, // this page's session token (also in localStorage, to resume after a reload)
  ladders: new Map(), // name -> {name, system, title, live, columns, rows, movedUntil, section, tbody, count}
  profile: null,
  profileToken: 0,
  charts: {},
  match: null,
  claim: null,
  invitations: new Map(), // received, by inviter
  sent: new Map(), // sent, by invited player
  disputes: new Map(), // match id -> the `disputes` entry; what an admin has to decide
  who: [],
  connectedOnce: false,
  replaced: false,
};
window.matchlobby = { lobby, state, alerts, charts: state.charts };
const talk = setUpTalk({ lobby, act, state });
const pluginCommands = setUpPluginCommands({ lobby, act });

// ---- small helpers ------------------------------------------------------------------------

// A message in the status line at the top, or in `where` (a form's own feedback line, next
// to what the user is looking at).
function say(text, kind = "info", where = null) {
  const box = where || $("status");
  box.textContent = text;
  box.className = `${where ? "feedback" : "status"} ${kind}`;
  if (where && text) where.scrollIntoView({ block: "nearest" }); // on a phone, where the eye is
}

// Run an action; a refusal from the server (or a lost connection) becomes a message on the page
// (in `where` when given, emptied as the action starts). Background refreshes (quiet) say nothing about a lost connection:
// the header shows it, and everything is loaded again on reconnecting.
async function act(fn, { quiet = false, where = null } = {}) {
  if (where) say("", "info", where); // a new attempt: the last one's message no longer applies
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof LobbyError)) console.error(err);
    else if (quiet && err.code === "disconnected") return undefined;
    say(err.message || String(err), "error", where);
    return undefined;
  }
}


const timers = new Map();
function soon(key, fn, ms = 60) {
  clearTimeout(timers.get(key));
  timers.set(key, setTimeout(() => {
    timers.delete(key);
    act(fn, { quiet: true });
  }, ms));
}

// ---- values as the server describes them ---------------------------------------------------
// Every ladder's columns come from the server (the `ladders` reply): key, label, type
// (integer, real, text, boolean), decimals and help. Nothing here knows a rating system.

// What a ladder that comes without columns shows.
const RATING = { key: "rating", label: "Rating", type: "real" };
const GAMES = { key: "games", label: "Games", type: "integer" };
const REAL_DECIMALS = 2; // a real column that names no decimals

const isNumeric = (column) => column.type === "integer" || column.type === "real";

function places(column) {
  const d = column.decimals;
  return Number.isInteger(d) ? Math.min(Math.max(d, 0), 20) : REAL_DECIMALS;
}

// A value as people read it: rounded as its column says, yes/no, "–" when there is none.
function fmtValue(column, v) {
  if (v === null || v === undefined) return "–";
  if (column.type === "boolean") return v ? "yes" : "no";
  if (typeof v !== "number") return String(v);
  if (column.type === "integer") return String(Math.round(v));
  if (column.type === "real") return v.toFixed(places(column));
  return String(v);
}

function fmtChange(column, change) {
  if (typeof change !== "number") return "new";
  const text = fmtValue(column, Math.abs(change));
  return change < 0 ? `−${text}` : `+${text}`;
}

function columnsOf(ladder) {
  const columns = state.ladders.get(ladder)?.columns;
  return columns && columns.length ? columns : [RATING, GAMES];
}

// How the ladder's rating (what history and rating changes record) is shown.
function ratingColumn(ladder) {
  return columnsOf(ladder).find((c) => c.key === "rating") || RATING;
}

function columnHeading(column) {
  return el("th", { scope: "col", class: isNumeric(column) ? "num" : null, title: column.help || null },
    column.help ? el("span", { class: "explained" }, column.label) : column.label);
}

// What each column means, for those the server explains (the headings carry it as a title too).
function legend(columns) {
  const explained = columns.filter((c) => c.help);
  if (!explained.length) return null;
  return el("details", { class: "legend" },
    el("summary", {}, "What the columns mean"),
    el("dl", {}, explained.flatMap((c) => [el("dt", {}, c.label), el("dd", {}, c.help)])));
}

// What the ladder's rating is, said in words where it is shown (its column's help, from the
// server: a ČAS strength is rescaled 0–1000 at each close, so it moves without playing).
function helpOf(column) {
  return column && column.help ? el("p", { class: "hint rating-help" }, `${column.label}: ${column.help}`) : null;
}

const ratingHelp = (ladder) => helpOf(ratingColumn(ladder));

function fmtLength(length) {
  return length === "unlimited" ? "unlimited (unrated)" : `${length} point${length === 1 ? "" : "s"}`;
}

function playerLink(name) {
  return el("a", { href: `#player=${encodeURIComponent(name)}`, dataset: { playerLink: name } }, name);
}

// ---- ladders --------------------------------------------------------------------------------

function buildLadder(info) {
  const columns = info.columns && info.columns.length ? info.columns : [RATING, GAMES];
  const headingId = `ladder-${info.ladder}`;
  const tbody = el("tbody");
  const count = el("span", { class: "hint" });
  const empty = el("p", { class: "hint" }, "No rated players yet.");
  const section = el("section", { class: "ladder", "aria-labelledby": headingId, dataset: { ladder: info.ladder } },
    el("h3", { id: headingId }, info.ladder, " ",
      el("span", { class: "tag" }, info.system_title || info.system), " ",
      el("small", { class: "hint" }, `${info.format}, rated ${info.updated}`), " ", count),
    el("div", { class: "table-wrap", role: "region", "aria-label": `Ranking on ${info.ladder}` },
      el("table", { class: "ladder-table" },
        el("thead", {}, el("tr", {},
          el("th", { scope: "col", class: "num" }, "Rank"),
          el("th", { scope: "col" }, "Player"),
          columns.map(columnHeading),
          el("th", { scope: "col" }, "Active"))),
        tbody)),
    empty,
    helpOf(columns.find((c) => c.key === "rating")),
    legend(columns),
    evaluationPanel({ name: info.ladder, system: info.system, title: info.system_title || info.system }, lobby));
  const ladder = {
    name: info.ladder, system: info.system, title: info.system_title || info.system, live: Boolean(info.live),
    columns, rows: null, movedUntil: new Map(), section, tbody, count, empty,
  };
  state.ladders.set(info.ladder, ladder);
  return section;
}

function renderLadder(ladder, rows) {
  const now = Date.now();
  if (ladder.rows !== null) {
    const before = new Map(ladder.rows.map((r) => [r.player, r]));
    for (const r of rows) {
      const old = before.get(r.player);
      let how = null;
      if (!old) how = "new";
      else if (old.rating !== r.rating) how = r.rating > old.rating ? "up" : "down";
      else if (old.rank !== r.rank) how = "shifted";
      if (how) ladder.movedUntil.set(r.player, [now + HIGHLIGHT_MS, how]);
    }
  }
  ladder.rows = rows;
  const { columns } = ladder;
  let soonest = Infinity;
  const trs = rows.map((r) => {
    const moved = ladder.movedUntil.get(r.player);
    const classes = [r.active ? "" : "inactive"];
    if (moved && moved[0] > now) {
      classes.push("moved", moved[1]);
      soonest = Math.min(soonest, moved[0]);
    } else {
      ladder.movedUntil.delete(r.player);
    }
    return el("tr", { class: classes.join(" ").trim() || null, dataset: { player: r.player, rating: String(r.rating) } },
      el("td", { class: "num" }, String(r.rank)),
      el("th", { scope: "row" }, playerLink(r.player)),
      columns.map((c) => el("td", { class: [isNumeric(c) ? "num" : "", c.key === "rating" ? "rating" : ""].join(" ").trim() || null },
        fmtValue(c, r[c.key]))),
      el("td", {}, r.active ? "yes" : "no"));
  });
  ladder.tbody.replaceChildren(...trs);
  ladder.empty.hidden = rows.length > 0;
  ladder.tbody.closest(".table-wrap").hidden = rows.length === 0;
  watchTables(ladder.section);
  ladder.count.textContent = rows.length ? `· ${rows.length} player${rows.length === 1 ? "" : "s"}` : "";
  if (soonest !== Infinity) setTimeout(() => renderLadder(ladder, ladder.rows), soonest - now + 20);
  updateKnownPlayers();
}

async function loadLadder(name) {
  const ladder = state.ladders.get(name);
  const data = await lobby.callAll("ladder", { ladder: name, from: 1, count: 100000, all: true });
  renderLadder(ladder, data.players);
}

function shownLadders() {
  const only = $("ladder-filter").value;
  return [...state.ladders.keys()].filter((n) => !only || n === only);
}

async function watchShown() {
  for (const [name, ladder] of state.ladders) {
    const shown = shownLadders().includes(name);
    ladder.section.hidden = !shown;
    if (shown) {
      await lobby.call("watch", { ladder: name });
      await loadLadder(name);
    } else if (ladder.rows !== null) {
      await lobby.call("unwatch", { ladder: name });
      ladder.rows = null;
    }
  }
}

async function loadLadders() {
  const { ladders } = await lobby.call("ladders");
  if (state.ladders.size === 0) {
    $("ladders").replaceChildren(...ladders.map(buildLadder));
    const filter = $("ladder-filter");
    filter.append(...ladders.map((l) => el("option", { value: l.ladder }, l.ladder)));
    $("invite-ladder").replaceChildren(...ladders.filter((l) => l.live)
      .map((l) => el("option", { value: l.ladder }, l.ladder)));
    seekPanel.setLadders(ladders);
    $("event-ladder").replaceChildren(...ladders.map((l) => el("option", { value: l.ladder }, `${l.ladder} (${l.system_title || l.system})`)));
  } else {
    for (const l of state.ladders.values()) l.rows = null;
  }
  await watchShown();
}

function updateKnownPlayers() {
  const names = new Set();
  for (const l of state.ladders.values()) for (const r of l.rows || []) names.add(r.player);
  $("known-players").replaceChildren(...[...names].sort().map((n) => el("option", { value: n })));
}

// ---- profile --------------------------------------------------------------------------------

async function openProfile(name, { focus = true } = {}) {
  const token = ++state.profileToken;
  const [who, history] = await Promise.all([
    lobby.call("whois", { name }),
    lobby.callAll("history", { name }),
  ]);
  // the charts place an event's results at the event's date
  const eventDates = new Map();
  if (history.entries.some((e) => e.cause.event !== undefined)) {
    for (const e of (await lobby.call("events")).events) eventDates.set(e.id, e.date);
  }
  if (token !== state.profileToken) return;
  state.profile = who.player;
  renderProfile(who, history.entries, eventDates);
  if (focus) {
    $("profile").scrollIntoView({ block: "start" });
    $("profile-heading").focus();
  }
}

// The rating in a profile: the number, with what the ladder calls it and its help as a title.
function ratingCell(r) {
  const column = ratingColumn(r.ladder);
  const title = [column.label, column.help].filter(Boolean).join(": ");
  const text = fmtValue(column, r.rating);
  return el("td", { class: "num rating", title }, column.help ? el("span", { class: "explained" }, text) : text);
}

// A profile row's other columns (not the rating, not the games): "Label value, …".
function detailsOf(r) {
  const shown = columnsOf(r.ladder).filter((c) => c.key !== "rating" && c.key !== "games");
  return shown.flatMap((c, i) => [i ? ", " : null,
    el("span", { class: c.help ? "explained" : null, title: c.help || null, dataset: { key: c.key } },
      `${c.label} ${fmtValue(c, r[c.key])}`)]);
}

// "3–1" (won–lost), with draws when there were some: "3–1, 2 drawn".
function fmtRecord(rec) {
  if (!rec) return "–";
  return `${rec.won}–${rec.lost}${rec.drawn ? `, ${rec.drawn} drawn` : ""}`;
}

function renderProfile(who, entries, eventDates = new Map()) {
  for (const chart of Object.values(state.charts)) chart.destroy();
  for (const key of Object.keys(state.charts)) delete state.charts[key];
  $("profile-heading").textContent = `Player profile: ${who.player}`;
  const presence = who.online ? `online, ${who.status}` : `offline${who.last_login ? `, last login ${who.last_login.replace("T", " ").replace("Z", " UTC")}` : ""}`;
  const m = who.matches || {};
  const body = [
    el("p", { class: "profile-facts" },
      el("strong", {}, who.player), " ", el("span", { class: "tag" }, who.role), " — ", presence, ". ",
      `Matches: ${m.played ?? 0} played, ${m.dropped ?? 0} dropped, ${m.disputed ?? 0} disputed.`),
  ];
  if (who.match) {
    body.push(el("p", {}, `Playing match ${who.match.match} on ${who.match.ladder}: ${who.match.a} vs ${who.match.b}.`));
  }
  const record = who.record || {};
  if (who.ratings.length) {
    body.push(el("div", { class: "table-wrap", role: "region", "aria-label": `Ratings of ${who.player}` },
      el("table", { class: "ratings-table" },
        el("caption", {}, "Ratings"),
        el("thead", {}, el("tr", {}, ["Ladder", "Rank", "Rating", "Won–lost", "Details", "Games", "Active"].map((t) => el("th", { scope: "col" }, t)))),
        el("tbody", {}, who.ratings.map((r) => el("tr", { dataset: { ladder: r.ladder } },
          el("th", { scope: "row" }, r.ladder),
          el("td", { class: "num" }, `${r.rank} of ${r.of}`),
          ratingCell(r),
          el("td", { class: "num", dataset: { key: "record" } }, fmtRecord(record[r.ladder])),
          el("td", { class: "wrap" }, detailsOf(r)),
          el("td", { class: "num" }, String(r.games ?? "–")),
          el("td", {}, r.active ? "yes" : "no")))))));
    const helps = new Map();
    for (const r of who.ratings) {
      const column = ratingColumn(r.ladder);
      if (column.help) helps.set(`${column.label}: ${column.help}`, r.ladder);
    }
    for (const [text, ladder] of helps) body.push(el("p", { class: "hint rating-help", dataset: { ladder } }, text));
  } else {
    body.push(el("p", { class: "hint" }, "No ratings yet."));
  }
  const byLadder = new Map();
  for (const e of entries) {
    if (!byLadder.has(e.ladder)) byLadder.set(e.ladder, []);
    byLadder.get(e.ladder).push(e);
  }
  const pending = [];
  if (byLadder.size === 0) body.push(el("p", { class: "hint" }, "No rating history yet."));
  for (const [ladder, list] of byLadder) {
    const column = ratingColumn(ladder);
    const plot = el("div", { class: "chart" });
    const numbers = historyTable(list, { column, fmtValue, fmtChange });
    body.push(el("figure", { class: "history", dataset: { ladder, points: String(list.length) } },
      el("figcaption", {}, `${ladder}: rating after each change (${list.length} change${list.length === 1 ? "" : "s"})`),
      plot,
      el("details", {},
        el("summary", {}, `Each change on ${ladder}: against whom, how it went`),
        el("div", { class: "table-wrap", role: "region", "aria-label": `History on ${ladder}` },
          numbers))));
    pending.push([ladder, column, list, plot]);
  }
  if (entries.length) {
    const name = who.player;
    body.push(el("div", { class: "buttons exports" }, el("span", {}, "Export the rating history:"),
      el("button", { type: "button", class: "small secondary", onclick: () => download(
        `${fileName(name, "history")}.csv`, historyCsv(name, entries), "text/csv") }, "CSV"),
      el("button", { type: "button", class: "small secondary", onclick: () => download(
        `${fileName(name, "history")}.json`, historyJson(name, entries), "application/json") }, "JSON")));
  }
  $("profile-body").replaceChildren(...body);
  watchTables($("profile-body"));
  for (const [ladder, column, list, plot] of pending) state.charts[ladder] = drawChart(ladder, column, list, plot, eventDates);
}

function chartWidth(node) {
  return Math.max(240, Math.floor(node.clientWidth || 320));
}

// Tick steps of a y axis whose values are whole numbers (uPlot would also try 2.5, 25, …).
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

// The y axis's labels, with as many places as its step needs (none for a whole step).
function axisTicks(vals) {
  const step = vals.length > 1 ? Math.abs(vals[1] - vals[0]) : 1;
  let digits = 0;
  while (digits < 6 && Math.abs(step * 10 ** digits - Math.round(step * 10 ** digits)) > 1e-6) digits += 1;
  return vals.map((v) => (v === null || v === undefined ? "" : v.toFixed(digits)));
}

// The points of a history chart: the rating before the first change (the starting rating),
// just before it (a twentieth of the history's span, or a minute), then the rating after each
// change, where chartTimes places it; with what the cursor says of each. A newcomer without a
// rating (ČAS) starts at the first.
function chartPoints(entries, eventDates) {
  const placed = chartTimes(entries, eventDates, CHART_MIN_SPAN);
  const xs = placed.map((p) => p.x);
  const ys = placed.map((p) => p.entry.after);
  const labels = placed.map((p) => whenText(p.entry, eventDates));
  const first = placed[0]?.entry;
  if (first && first.before !== null && first.before !== undefined) {
    const span = xs[xs.length - 1] - xs[0];
    xs.unshift(xs[0] - (span > 0 ? Math.min(span / 20, 3600) : 60));
    ys.unshift(first.before);
    labels.unshift(null);
  }
  return [xs, ys, labels];
}

const CHART_MIN_SPAN = 600; // seconds: a chart of one point, or a few close ones, spans 10 minutes
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// The time axis in UTC, as the rest of the page: "14:05" (with the day under the first label
// and under the first of each new day), "Mar 14", "Mar 2026" or "2026" as the ticks' step grows.
function timeTicks(splits, step) {
  let day = null;
  return splits.map((ts) => {
    const d = new Date(ts * 1000);
    const date = `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
    if (step >= 365 * 86400) return String(d.getUTCFullYear());
    if (step >= 28 * 86400) return `${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
    if (step >= 86400) return date;
    const time = d.toISOString().slice(11, step < 60 ? 19 : 16);
    const label = date === day ? time : `${time}\n${date}`;
    day = date;
    return label;
  });
}

function drawChart(ladder, column, entries, node, eventDates) {
  const [xs, ys, labels] = chartPoints(entries, eventDates);
  const lone = xs.every((x) => x === xs[0]); // uPlot would give a lone instant a whole day
  const opts = {
    width: chartWidth(node),
    height: 220,
    tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    scales: {
      // points closer than CHART_MIN_SPAN (one alone) get room either side; one rating alone
      // gets 50 points above and below
      x: {
        time: true,
        range: (u, min, max) => {
          const [lo, hi] = lone ? [xs[0], xs[0]] : [min, max];
          return hi - lo >= CHART_MIN_SPAN ? [lo, hi] : [(lo + hi - CHART_MIN_SPAN) / 2, (lo + hi + CHART_MIN_SPAN) / 2];
        },
      },
      y: { range: (u, min, max) => (min === max ? [min - 50, max + 50] : window.uPlot.rangeNum(min, max, 0.1, true)) },
    },
    series: [
      { value: (u, v, si, i) => (v === null || v === undefined ? "–" : labels[i] ?? `${new Date(v * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`) },
      {
        label: ladder,
        stroke: "#1f5fa8",
        width: 2,
        points: { show: true, size: 8, fill: "#1f5fa8" },
        value: (u, v) => fmtValue(column, v),
      },
    ],
    axes: [{
      space: 80, // pixels at least from one tick to the next: labels keep a gap between them
      size: 56,
      values: (u, splits, axis, space, step) => timeTicks(splits, step),
    }, {
      size: 64,
      values: (u, vals) => axisTicks(vals),
      ...(column.type === "integer" ? { incrs: WHOLE_STEPS } : {}),
    }],
  };
  return new window.uPlot(opts, [xs, ys], node);
}

window.addEventListener("resize", () => soon("resize", () => {
  for (const chart of Object.values(state.charts)) {
    chart.setSize({ width: chartWidth(chart.root.parentElement), height: 220 });
  }
}, 150));

function profileFromHash() {
  const m = /^#player=(.+)$/.exec(window.location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

document.addEventListener("click", (ev) => {
  const link = ev.target.closest("a[data-player-link]");
  if (!link || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
  ev.preventDefault();
  history.pushState(null, "", link.getAttribute("href"));
  act(() => openProfile(link.dataset.playerLink));
});
window.addEventListener("hashchange", () => {
  const name = profileFromHash();
  if (name) act(() => openProfile(name));
});

$("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const name = $("search-name").value.trim();
  if (!name) return;
  act(async () => {
    await openProfile(name);
    history.pushState(null, "", `#player=${encodeURIComponent(state.profile)}`);
  });
});

// ---- account --------------------------------------------------------------------------------

// After a login or a resume: `data` is the reply (with a new `session` after a login).
function signedIn(data, { focus = false } = {}) {
  state.me = data.player;
  state.role = data.role;
  if (data.session) {
    state.token = data.session.token;
    saveSession(data.player, data.session);
  }
  $("me-name").textContent = data.player;
  $("me-role").textContent = data.role;
  $("login-form").hidden = true;
  $("signed-in").hidden = false;
  $("play").hidden = false;
  $("skip-play").hidden = false;
  desk.setAllowed(data.role === "admin");
  $("sound-on").checked = alerts.soundOn;
  renderNotifyState();
  state.match = data.match || null;
  disputes.signedIn(data.disputes);
  renderMatch();
  play.resumed(data);
  soon("who", loadWho, 0);
  soon("invitations", loadInvitations, 0);
  soon("stake", previewStake, 0);
  if (data.role === "admin") {
    soon("events", loadEvents, 0);
    soon("disputes", findDisputes, 0);
  }
  if (focus) $("play-heading").focus();
}

function signedOut() {
  state.me = null;
  state.role = null;
  state.token = null;
  state.match = null;
  state.claim = null;
  state.invitations.clear();
  state.sent.clear();
  disputes.signedOut();
  $("login-form").hidden = false;
  $("signed-in").hidden = true;
  $("other-sessions").hidden = true;
  $("play").hidden = true;
  $("skip-play").hidden = true;
  desk.setAllowed(false);
  renderInvitations();
  renderMatch();
  soon("who", loadWho, 0);
}

const MIN_PASSWORD = 8;

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const cmd = ev.submitter && ev.submitter.value === "register" ? "register" : "login";
  const name = $("login-name").value.trim();
  const password = $("login-password").value;
  const repeat = $("login-password2");
  if (cmd === "register") {
    // A new account asks for its password twice; the first press shows the second field.
    if ($("repeat-label").hidden) {
      $("repeat-label").hidden = false;
      $("register-hint").hidden = false;
      say("Type the password again to make the account, then press Register.");
      repeat.focus();
      return;
    }
    if (password.length < MIN_PASSWORD) {
      say(`A password needs at least ${MIN_PASSWORD} characters.`, "error");
      $("login-password").focus();
      return;
    }
    if (repeat.value !== password) {
      say("The two passwords differ; type them again.", "error");
      repeat.value = "";
      repeat.focus();
      return;
    }
  }
  act(async () => {
    const data = await lobby.call(cmd, { name, password });
    $("login-password").value = "";
    repeat.value = "";
    $("repeat-label").hidden = true;
    $("register-hint").hidden = true;
    signedIn(data, { focus: true });
    say(cmd === "register" ? `Welcome, ${data.player}: your account is made and you are logged in.` : `Logged in as ${data.player}.`);
    offerToEndOthers(data.other_sessions || 0);
  });
});

$("logout").addEventListener("click", () => act(async () => {
  forgetSession(state.token);
  await lobby.call("logout");
  signedOut();
  say("Logged out.");
  $("login-name").focus();
}));

$("logout-all").addEventListener("click", () => act(async () => {
  forgetSession(state.token);
  const data = await lobby.call("logout", { all: true });
  signedOut();
  say(`Logged out everywhere: ${plural(data.ended, "session")} ended.`);
  $("login-name").focus();
}));

// After a login with the password: the account's other sessions, which it offers to end.
function offerToEndOthers(count) {
  const box = $("other-sessions");
  if (!count) {
    box.hidden = true;
    return;
  }
  $("other-sessions-text").textContent = `You have ${plural(count, "other session")} open (other browsers or devices).`;
  box.hidden = false;
}

$("end-others").addEventListener("click", () => act(async () => {
  const data = await lobby.call("logout", { others: true });
  $("other-sessions").hidden = true;
  say(`Ended ${plural(data.ended, "other session")}; you stay logged in here.`);
}));
$("keep-others").addEventListener("click", () => {
  $("other-sessions").hidden = true;
});

lobby.on("logged_out", (data) => {
  forgetSession(state.token); // unless another tab has saved its own since
  // replaced or banned: the server closes this connection next; keep the reason on screen.
  // Otherwise (a new password or role, a logout everywhere) it stays open, as a spectator's.
  state.replaced = data.cause === "replaced" || data.cause === "banned";
  signedOut();
  say(data.reason, "error");
});

// ---- who is online --------------------------------------------------------------------------

const STATUS_WORDS = { not_ready: "not ready" };
const NO_INVITE = new Set(["playing", "not_ready"]); // the server would refuse the invitation

// The ladder whose ratings "Online now" shows: the one chosen to invite on.
const chosenLadder = () => $("invite-ladder").value;

async function loadWho() {
  const data = await lobby.call("who");
  state.who = data.players;
  renderWho(data.spectators);
}

function renderWho(spectators = null) {
  const ladder = chosenLadder();
  const column = ladder ? ratingColumn(ladder) : RATING;
  const items = state.who.map((p) => {
    const rating = ladder && p.ratings ? p.ratings[ladder] : undefined;
    return el("li", { dataset: { player: p.player, status: p.status } },
      playerLink(p.player), " ", el("span", { class: `tag ${p.status}` }, STATUS_WORDS[p.status] || p.status),
      ladder ? el("span", { class: "online-rating", dataset: { rating: rating === undefined ? "" : String(rating) } },
        ` ${rating === undefined ? "unrated" : fmtValue(column, rating)}`) : null,
      state.me && !state.match && p.player !== state.me && !NO_INVITE.has(p.status)
        ? [" ", el("button", { type: "button", class: "small", onclick: () => {
          $("invite-name").value = p.player;
          soon("stake", previewStake, 0);
          $("invite-ladder").focus();
        } }, `Invite ${p.player}`)]
        : null);
  });
  $("online").replaceChildren(...(items.length ? items : [el("li", { class: "hint" }, "Nobody is logged in.")]));
  $("online-ladder").textContent = ladder ? `Ratings on ${ladder}.` : "";
  if (spectators !== null) $("spectators").textContent = `${plural(spectators, "spectator")} watching.`;
  $("online-players").replaceChildren(...state.who.filter((p) => p.player !== state.me)
    .map((p) => el("option", { value: p.player })));
}

// Who came, went, started or ended a match since the last push (at most one a second).
lobby.on("presence", (data) => {
  let newcomer = false;
  let lapsed = false;
  for (const { player, status } of data.players || []) {
    if (status === "offline") {
      lapsed = state.invitations.delete(player) | state.sent.delete(player) || lapsed;
      state.who = state.who.filter((p) => p.player !== player);
      continue;
    }
    const row = state.who.find((p) => p.player === player);
    if (row) row.status = status;
    else if (player !== state.me) newcomer = true; // their ratings come with `who`
  }
  if (lapsed) renderInvitations();
  if (newcomer) soon("who", loadWho);
  else renderWho();
});

// ---- playing --------------------------------------------------------------------------------

function stakeOf(stake, caption) {
  const column = ratingColumn(stake ? stake.ladder : chosenLadder());
  return stakeTable(stake, { fmt: (v) => fmtValue(column, v), fmtChange: (v) => fmtChange(column, v), caption });
}

function inviteArgs() {
  return {
    name: $("invite-name").value.trim(),
    ladder: $("invite-ladder").value,
    length: $("invite-length").value.trim() || "1",
  };
}

// What the invitation in the form would put at stake, asked before it is sent.
async function previewStake() {
  const box = $("invite-stake");
  const { name, ladder, length } = inviteArgs();
  if (!state.me || !name || !ladder || name === state.me) {
    box.replaceChildren();
    return;
  }
  if (length === "unlimited") {
    box.replaceChildren(stakeOf(null));
    return;
  }
  try {
    const stake = await lobby.call("stake", { name, ladder, length });
    const now = inviteArgs();
    if (now.name === name && now.ladder === ladder && now.length === length) box.replaceChildren(stakeOf(stake, "At stake"));
  } catch (err) {
    if (!(err instanceof LobbyError) || err.code === "disconnected") throw err;
    box.replaceChildren(el("p", { class: "hint" }, err.message));
  }
}

for (const id of ["invite-name", "invite-length"]) $(id).addEventListener("input", () => soon("stake", previewStake, 300));
$("invite-ladder").addEventListener("change", () => {
  soon("stake", previewStake, 0);
  renderWho();
});

$("invite-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  act(async () => {
    const data = await lobby.call("invite", inviteArgs());
    state.sent.set(data.to, data);
    renderInvitations();
    say(`${data.replaced ? "Invited again" : "Invited"} ${data.to} to ${data.ladder}, ${fmtLength(data.length)}; waiting for an answer.`);
  });
});

async function loadInvitations() {
  const { sent, received } = await lobby.call("invitations");
  state.sent = new Map(sent.map((i) => [i.to, i]));
  state.invitations = new Map(received.map((i) => [i.from, i]));
  renderInvitations();
}

function renderInvitations() {
  alerts.setWaiting(state.invitations.size);
  play.renderSign();
  const received = [...state.invitations.values()];
  $("invitations").replaceChildren(...(received.length ? [el("h3", {}, "Invitations to you"), el("ul", { class: "plain-list" },
    received.map((inv) => el("li", { class: "invitation", dataset: { from: inv.from } },
      el("span", {}, `${inv.from} invites you to ${inv.ladder}, ${fmtLength(inv.length)}; `,
        el("span", { class: "expiry" }, fmtExpiry(inv.expires_at)), "."),
      stakeOf(inv.stake),
      el("div", { class: "buttons" },
        el("button", { type: "button", onclick: () => act(async () => {
          const match = await lobby.call("join", { name: inv.from });
          state.invitations.clear();
          state.sent.clear();
          renderInvitations();
          state.match = match;
          state.claim = null;
          renderMatch();
          play.focusMatch();
          say(`Match ${match.match} started: ${match.a} vs ${match.b} on ${match.ladder}.`);
        }) }, `Join ${inv.from}`),
        el("button", { type: "button", class: "secondary", onclick: () => act(async () => {
          await lobby.call("decline", { name: inv.from });
          state.invitations.delete(inv.from);
          renderInvitations();
          play.focusAfterInvitation();
          say(`Declined ${inv.from}'s invitation.`);
        }) }, `Decline ${inv.from}`)))))] : []));
  const sent = [...state.sent.values()];
  $("sent-invitations").replaceChildren(...(sent.length ? [el("h3", {}, "Your invitations"), el("ul", { class: "plain-list" },
    sent.map((inv) => el("li", { class: "invitation", dataset: { to: inv.to } },
      el("span", {}, `To ${inv.to}: ${inv.ladder}, ${fmtLength(inv.length)}; `,
        el("span", { class: "expiry" }, fmtExpiry(inv.expires_at)), ". "),
      el("button", { type: "button", class: "small secondary", onclick: () => act(async () => {
        await lobby.call("uninvite", { name: inv.to });
        state.sent.delete(inv.to);
        renderInvitations();
        $("invite-name").focus(); // the button pressed is gone: back to inviting
        say(`Withdrew your invitation to ${inv.to}.`);
      }) }, `Withdraw ${inv.to}`))))] : []));
  watchTables($("play"));
}

// The expiry times count down while invitations stand.
setInterval(() => {
  if (state.invitations.size || state.sent.size) {
    for (const node of document.querySelectorAll("#play li.invitation")) {
      const inv = node.dataset.from ? state.invitations.get(node.dataset.from) : state.sent.get(node.dataset.to);
      const expiry = node.querySelector(".expiry");
      if (inv && expiry) expiry.textContent = fmtExpiry(inv.expires_at);
    }
  }
}, 1000);

function renderNotifyState() {
  const button = $("notify-on");
  const text = $("notify-state");
  if (!alerts.notificationsSupported()) {
    button.hidden = true;
    text.textContent = "";
  } else if (window.Notification.permission === "granted") {
    button.hidden = true;
    text.textContent = "Browser notifications are on.";
  } else if (window.Notification.permission === "denied") {
    button.hidden = true;
    text.textContent = "Browser notifications are blocked for this page.";
  } else {
    button.hidden = false;
    text.textContent = "";
  }
}

$("sound-on").addEventListener("change", (ev) => {
  alerts.soundOn = ev.target.checked;
  if (ev.target.checked) alerts.tone(); // let the player hear it (and the browser allow audio)
});
$("notify-on").addEventListener("click", () => act(async () => {
  await alerts.askNotifications();
  renderNotifyState();
}));

// A match's state in words.
const MATCH_STATE = { playing: "playing", claimed: "a win is reported", disputed: "disputed" };

function renderMatch() {
  const panel = $("match-panel");
  const m = state.match;
  talk.refresh(); // the match's conversation, the talk forms of a login
  $("invite-form").hidden = Boolean(m);
  renderWho(); // no Invite buttons while playing
  seekPanel.render(); // no Find a match while playing
  if (!m || !state.me) {
    panel.replaceChildren();
    return;
  }
  const opponent = m.a === state.me ? m.b : m.a;
  const parts = [
    el("h3", {}, "Your match"),
    el("p", {}, `Match ${m.match}: ${m.a} vs ${m.b} on ${m.ladder}, ${fmtLength(m.length)} — ${MATCH_STATE[m.status] || m.status}.`),
  ];
  if (m.stake !== undefined) parts.push(stakeOf(m.stake, "At stake"));
  parts.push(play.dropNotice(m));
  const claim = state.claim && state.claim.match === m.match ? state.claim : null;
  if (m.status === "claimed" && claim && claim.by !== state.me) {
    const scores = claim.scores ? ` (${claim.scores[0]}–${claim.scores[1]})` : "";
    parts.push(el("p", { class: "notice" }, `${claim.by} reports a win${scores}.`),
      el("div", { class: "buttons" },
        el("button", { type: "button", onclick: () => act(async () => {
          showFinished(await lobby.call("confirm", { match: m.match }));
          play.focusResult();
        }) }, "Confirm their win"),
        el("button", { type: "button", class: "secondary", onclick: () => act(async () => {
          const data = await lobby.call("dispute", { match: m.match });
          disputes.disputed(m, data.by);
          renderMatch();
          play.focusMatch();
          say(`You disputed match ${m.match}; an admin will decide it. You are free to play other matches meanwhile.`);
        }) }, "Dispute")));
  } else if (m.status === "claimed") {
    parts.push(el("p", { class: "hint" }, `Waiting for ${opponent} to confirm or dispute your win.`));
  } else if (m.status === "disputed") {
    const by = m.disputedBy ? ` by ${m.disputedBy === state.me ? "you" : m.disputedBy}` : "";
    parts.push(el("p", { class: "notice dispute-state" },
      `Disputed${by}: an admin will decide it, by giving the win to one of you or by voiding the match. `
      + "Until then it cannot be resigned, claimed or aborted."));
  }
  if (m.status === "playing") {
    const mine = el("input", { id: "score-mine", inputmode: "numeric", pattern: "[0-9]*", size: "4" });
    const theirs = el("input", { id: "score-theirs", inputmode: "numeric", pattern: "[0-9]*", size: "4" });
    parts.push(
      el("form", { class: "stack-form", onsubmit: (ev) => {
        ev.preventDefault();
        act(async () => {
          const data = await lobby.call("report win", { score_a: mine.value.trim(), score_b: theirs.value.trim() });
          m.status = data.status;
          renderMatch();
          play.focusMatch();
          say(`You reported a win in match ${m.match}; ${opponent} must confirm it.`);
        });
      } },
      el("label", {}, "Your score (optional) ", mine),
      el("label", {}, "Opponent's score (optional) ", theirs),
      el("button", { type: "submit" }, "Report a win")),
      el("div", { class: "buttons" },
        el("button", { type: "button", class: "secondary", onclick: () => act(async () => {
          const data = await lobby.call("abort");
          if (data.status === "aborted") {
            state.match = null;
            renderMatch();
            play.focusMatch();
            say(`Match ${data.match} aborted, unrated.`);
          } else {
            say(`You proposed to abort match ${data.match}; ${opponent} must agree.`);
          }
        }) }, "Abort (both must agree)")),
      play.resignBox(m));
  }
  panel.replaceChildren(el("div", { class: "match" }, parts));
  watchTables(panel);
}

// How a match ended, as a sentence: who won, where, and what the loser did (or who decided).
const HOW_WON = {
  resign: (d) => `${d.loser} resigned`,
  confirm: (d) => `${d.loser} confirmed it`,
  claim: (d) => `${d.loser} left and did not come back in time`,
  adjudicate: () => "a tournament director decided it",
};

function wonSentence(data) {
  const how = HOW_WON[data.how];
  const why = how ? `: ${how(data)}` : "";
  return `${data.winner} won on ${data.ladder}, ${fmtLength(data.length)}${why}.${data.rated || data.length === "unlimited" ? "" : " Unrated."}`;
}

function showFinished(data) {
  if (state.match && state.match.match === data.match) {
    state.match = null;
    state.claim = null;
    renderMatch();
  }
  disputes.forget(data.match);
  soon("who", loadWho, 0);
  const mine = state.me && (data.winner === state.me || data.loser === state.me);
  if (!mine) return;
  const column = ratingColumn(data.ladder);
  const changes = data.changes.map((c) => el("li", { dataset: { player: c.player, after: String(c.after) } },
    `${c.player}: ${fmtValue(column, c.before)} → ${fmtValue(column, c.after)} (${fmtChange(column, c.change)})`));
  $("last-result").replaceChildren(
    el("h3", {}, `Match ${data.match} finished`),
    el("p", {}, wonSentence(data)),
    changes.length ? el("ul", { class: "plain-list" }, changes) : null);
  const own = data.changes.find((c) => c.player === state.me);
  say(`Match ${data.match}: ${data.winner} won.${own ? ` Your rating: ${fmtValue(column, own.after)} (${fmtChange(column, own.change)}).` : ""}`);
}

lobby.on("invited", (data) => {
  state.invitations.set(data.from, data);
  renderInvitations();
  const text = `${data.from} invites you to ${data.ladder}, ${fmtLength(data.length)}.`;
  alerts.invited(text);
  say(text);
});
lobby.on("invitation_withdrawn", (data) => {
  state.invitations.delete(data.from);
  renderInvitations();
  say(`${data.from} withdrew their invitation.`);
});
lobby.on("invitation_expired", (data) => {
  const mine = data.from === state.me;
  if (mine) state.sent.delete(data.to);
  else state.invitations.delete(data.from);
  renderInvitations();
  say(mine ? `Your invitation to ${data.to} expired unanswered.` : `${data.from}'s invitation expired.`);
});
lobby.on("declined", (data) => {
  state.sent.delete(data.by);
  renderInvitations();
  say(`${data.by} declined your invitation.`);
});
lobby.on("match_started", (data) => {
  state.match = data;
  state.claim = null;
  state.invitations.clear();
  state.sent.clear();
  renderInvitations();
  renderMatch();
  soon("who", loadWho, 0);
  say(`Match ${data.match} started: ${data.a} vs ${data.b} on ${data.ladder}.`);
});
lobby.on("result_claimed", (data) => {
  state.claim = data;
  if (state.match && state.match.match === data.match) state.match.status = "claimed";
  renderMatch();
  say(`${data.by} reports a win in match ${data.match}: confirm or dispute it.`);
});
lobby.on("abort_requested", (data) => say(`${data.by} proposes to abort match ${data.match}; press “Abort” to agree.`));
lobby.on("match_aborted", (data) => {
  if (state.match && state.match.match === data.match) state.match = null;
  renderMatch();
  soon("who", loadWho, 0);
  say(`Match ${data.match} was aborted, unrated.`);
});
lobby.on("match_finished", showFinished);
lobby.on("match_corrected", (data) => {
  if (state.match && state.match.match === data.match && data.status !== "finished") state.match = null;
  disputes.forget(data.match);
  renderMatch();
  soon("who", loadWho, 0);
  const decided = data.status === "finished" && data.winner ? `${data.winner} wins` : data.status;
  say(`An admin decided match ${data.match}: ${decided}${data.reason ? ` (${data.reason})` : ""}.`);
});

// ---- disputes ------------------------------------------------------------------------------

const disputes = setUpDisputes({ lobby, act, say, alerts, fmtLength, state, renderMatch });
const { findDisputes } = disputes;

// ---- live ladder pushes ---------------------------------------------------------------------

lobby.on("rating_changed", (data) => {
  if (state.ladders.get(data.ladder)?.rows) soon(`ladder:${data.ladder}`, () => loadLadder(data.ladder));
  if (state.profile && state.profile === data.player) soon("profile", () => openProfile(state.profile, { focus: false }), 120);
  soon("who-ratings", loadWho, 200);
});
// Many ratings moved at once (a close, a correction, an import): the push says which, a few
// at most, and the table asks again for the rows it shows.
lobby.on("ladder_updated", (data) => {
  if (data.event) soon("browse", loadBrowse, 0); // an event closed: browse it
  if (state.ladders.get(data.ladder)?.rows) soon(`ladder:${data.ladder}`, () => loadLadder(data.ladder), 0);
  if (state.profile) soon("profile", () => openProfile(state.profile, { focus: false }), 120);
  soon("who-ratings", loadWho, 200);
});

// The server missed some of the lobby's updates (several servers on one database): ask again
// for everything on screen.
lobby.on("refresh", () => {
  for (const [name, ladder] of state.ladders) {
    if (ladder.rows) soon(`ladder:${name}`, () => loadLadder(name), 0);
  }
  soon("browse", loadBrowse, 0);
  soon("invitations", loadInvitations, 0);
  if (state.profile) soon("profile", () => openProfile(state.profile, { focus: false }), 120);
  soon("who-ratings", loadWho, 200);
});

$("ladder-filter").addEventListener("change", () => act(watchShown));

// ---- events: the director's desk and browsing ------------------------------------------------

const desk = setUpDesk({ lobby, act, say });
const { loadEvents, loadBrowse } = setUpEvents({
  lobby, act, say, soon, ratingColumn, ratingHelp, fmtValue, fmtChange, playerLink,
});

const seekPanel = setUpSeek({ lobby, act, say, state });
const play = setUpPlay({
  lobby, state, act, say, renderMatch, showFinished, fmtLength, ratingColumn, fmtValue, fmtChange,
});

// ---- connection -----------------------------------------------------------------------------

// Log in again with a session token: the saved one after a reload, this page's own after a
// reconnect. A token the server no longer knows is forgotten.
async function resumeSession(token) {
  if (!token) return false;
  try {
    const data = await lobby.call("resume", { token });
    state.token = token;
    signedIn(data);
    return true;
  } catch (err) {
    if (err instanceof LobbyError && err.code === "forbidden") {
      forgetSession(token);
      signedOut();
      say(err.message, "error");
      return false;
    }
    if (err instanceof LobbyError && err.code === "rate_limited") {
      // too many logins for now (a crowd behind one address coming back at once): the page
      // loads as a spectator's and tries the same token again a little later
      say(err.message, "error");
      soon("resume", () => resumeSession(token), RESUME_RETRY_MS);
      return false;
    }
    throw err;
  }
}

const RESUME_RETRY_MS = 10000;

lobby.on("open", (hello) => {
  $("connection").textContent = `Connected to ${hello.server} ${hello.version}.`;
  $("connection").className = "connection ok";
  const again = state.connectedOnce;
  state.connectedOnce = true;
  act(async () => {
    const resumed = await resumeSession(again ? state.token : savedSession()?.token);
    if (again && !resumed) signedOut();
    await loadLadders();
    await loadWho();
    await loadBrowse();
    await pluginCommands.load();
    const wanted = profileFromHash() || (again ? state.profile : null);
    if (wanted) await openProfile(wanted, { focus: false });
    document.body.dataset.loaded = "true"; // what tests and screenshots wait for
    if (again && !state.replaced) say("Reconnected.");
    state.replaced = false;
  });
});

// The server is restarting: it closes this connection once it has answered what was sent;
// the page connects again after the wait it names and resumes the session.
const restartNotice = (ms) => `The server is restarting; reconnecting in ${Math.max(1, Math.round(ms / 1000))} s…`;

lobby.on("server_shutdown", (data) => say(restartNotice(restartWait(data))));

lobby.on("close", ({ retryIn, restarting }) => {
  $("connection").textContent = restarting ? restartNotice(retryIn)
    : retryIn < 1000 ? "Connection lost; reconnecting…"
      : `Connection lost; reconnecting in ${Math.round(retryIn / 1000)} s…`;
  $("connection").className = "connection lost";
});

lobby.connect();
