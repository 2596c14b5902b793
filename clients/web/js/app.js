// The lobby's web page: live ladders, player profiles with rating charts,
// playing matches and directing events. All text reaches the DOM through
// text nodes (el/append), never through innerHTML.

import { Lobby, LobbyError, lobbyUrl } from "./lobby.js";

const HIGHLIGHT_MS = 4000;
const $ = (id) => document.getElementById(id);
const lobby = new Lobby(lobbyUrl());
const state = {
  me: null,
  role: null,
  credentials: null, // kept in memory only, to log in again after a reconnect
  ladders: new Map(), // name -> {name, system, title, live, columns, rows, movedUntil, section, tbody, count}
  profile: null,
  profileToken: 0,
  charts: {},
  match: null,
  claim: null,
  invitations: new Map(),
  connectedOnce: false,
  replaced: false,
};
window.matchlobby = { lobby, state, charts: state.charts };

// ---- small helpers ------------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function say(text, kind = "info") {
  const status = $("status");
  status.textContent = text;
  status.className = `status ${kind}`;
}

// Run an action; a refusal from the server (or a lost connection) becomes a message on the page.
// Background refreshes (quiet) say nothing about a lost connection: the header shows it, and
// everything is loaded again on reconnecting.
async function act(fn, { quiet = false } = {}) {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof LobbyError)) console.error(err);
    else if (quiet && err.code === "disconnected") return undefined;
    say(err.message || String(err), "error");
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
    el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-labelledby": headingId },
      el("table", { class: "ladder-table" },
        el("thead", {}, el("tr", {},
          el("th", { scope: "col", class: "num" }, "Rank"),
          el("th", { scope: "col" }, "Player"),
          columns.map(columnHeading),
          el("th", { scope: "col" }, "Active"))),
        tbody)),
    empty,
    legend(columns));
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
  if (token !== state.profileToken) return;
  state.profile = who.player;
  renderProfile(who, history.entries);
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

function renderProfile(who, entries) {
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
  if (who.ratings.length) {
    body.push(el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `Ratings of ${who.player}` },
      el("table", { class: "ratings-table" },
        el("caption", {}, "Ratings"),
        el("thead", {}, el("tr", {}, ["Ladder", "Rank", "Rating", "Details", "Games", "Active"].map((t) => el("th", { scope: "col" }, t)))),
        el("tbody", {}, who.ratings.map((r) => el("tr", { dataset: { ladder: r.ladder } },
          el("th", { scope: "row" }, r.ladder),
          el("td", { class: "num" }, `${r.rank} of ${r.of}`),
          ratingCell(r),
          el("td", { class: "wrap" }, detailsOf(r)),
          el("td", { class: "num" }, String(r.games ?? "–")),
          el("td", {}, r.active ? "yes" : "no")))))));
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
    const numbers = el("table", {},
      el("thead", {}, el("tr", {}, ["When (UTC)", "Before", "After", "Change", "Cause"]
        .map((t) => el("th", { scope: "col" }, t)))),
      el("tbody", {}, list.map((e) => el("tr", {},
        el("td", {}, e.at.replace("T", " ").replace("Z", "")),
        el("td", { class: "num" }, fmtValue(column, e.before)),
        el("td", { class: "num" }, fmtValue(column, e.after)),
        el("td", { class: "num" }, fmtChange(column, e.change)),
        el("td", {}, e.cause.match ? `match ${e.cause.match}` : `event ${e.cause.event}`)))));
    body.push(el("figure", { class: "history", dataset: { ladder, points: String(list.length) } },
      el("figcaption", {}, `${ladder}: rating after each change (${list.length} change${list.length === 1 ? "" : "s"})`),
      plot,
      el("details", {},
        el("summary", {}, `The numbers for ${ladder}`),
        el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `History on ${ladder}` },
          numbers))));
    pending.push([ladder, column, list, plot]);
  }
  $("profile-body").replaceChildren(...body);
  for (const [ladder, column, list, plot] of pending) state.charts[ladder] = drawChart(ladder, column, list, plot);
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

function drawChart(ladder, column, entries, node) {
  const xs = entries.map((e) => Date.parse(e.at) / 1000);
  const ys = entries.map((e) => e.after);
  const lone = xs.every((x) => x === xs[0]);
  const opts = {
    width: chartWidth(node),
    height: 220,
    scales: {
      // one point alone gets a day either side, or 50 rating points above and below
      x: { time: true, range: (u, min, max) => (lone ? [xs[0] - 86400, xs[0] + 86400] : [min, max]) },
      y: { range: (u, min, max) => (min === max ? [min - 50, max + 50] : window.uPlot.rangeNum(min, max, 0.1, true)) },
    },
    series: [
      {},
      {
        label: ladder,
        stroke: "#1f5fa8",
        width: 2,
        points: { show: true, size: 8, fill: "#1f5fa8" },
        value: (u, v) => fmtValue(column, v),
      },
    ],
    axes: [{}, {
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

function signedIn(data) {
  state.me = data.player;
  state.role = data.role;
  $("me-name").textContent = data.player;
  $("me-role").textContent = data.role;
  $("login-form").hidden = true;
  $("signed-in").hidden = false;
  $("play").hidden = false;
  $("admin").hidden = data.role !== "admin";
  state.match = data.match || null;
  renderMatch();
  soon("who", loadWho, 0);
  if (data.role === "admin") soon("events", loadEvents, 0);
}

function signedOut() {
  state.me = null;
  state.role = null;
  state.match = null;
  state.claim = null;
  state.invitations.clear();
  $("login-form").hidden = false;
  $("signed-in").hidden = true;
  $("play").hidden = true;
  $("admin").hidden = true;
  renderInvitations();
  renderMatch();
  soon("who", loadWho, 0);
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const cmd = ev.submitter && ev.submitter.value === "register" ? "register" : "login";
  const name = $("login-name").value.trim();
  const password = $("login-password").value;
  act(async () => {
    const data = await lobby.call(cmd, { name, password });
    state.credentials = { name, password };
    $("login-password").value = "";
    signedIn(data);
    say(cmd === "register" ? `Welcome, ${data.player}: your account is made and you are logged in.` : `Logged in as ${data.player}.`);
  });
});

$("logout").addEventListener("click", () => act(async () => {
  await lobby.call("logout");
  state.credentials = null;
  signedOut();
  say("Logged out.");
  $("login-name").focus();
}));

lobby.on("logged_out", (data) => {
  state.credentials = null;
  state.replaced = true; // the server closes this connection next; keep the reason on screen
  signedOut();
  say(data.reason, "error");
});

// ---- who is online --------------------------------------------------------------------------

async function loadWho() {
  const data = await lobby.call("who");
  const items = data.players.map((p) => el("li", {},
    playerLink(p.player), " ", el("span", { class: `tag ${p.status}` }, p.status),
    state.me && p.player !== state.me && p.status === "ready"
      ? [" ", el("button", { type: "button", class: "small", onclick: () => {
        $("invite-name").value = p.player;
        $("invite-ladder").focus();
      } }, `Invite ${p.player}`)]
      : null));
  $("online").replaceChildren(...(items.length ? items : [el("li", { class: "hint" }, "Nobody is logged in.")]));
  $("spectators").textContent = `${data.spectators} spectator${data.spectators === 1 ? "" : "s"} watching.`;
  $("online-players").replaceChildren(...data.players.filter((p) => p.player !== state.me)
    .map((p) => el("option", { value: p.player })));
}

lobby.on("player_online", () => soon("who", loadWho));
lobby.on("player_offline", (data) => {
  if (state.invitations.delete(data.player)) renderInvitations();
  soon("who", loadWho);
});

// ---- playing --------------------------------------------------------------------------------

$("invite-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const name = $("invite-name").value.trim();
  const ladder = $("invite-ladder").value;
  const length = $("invite-length").value.trim() || "1";
  act(async () => {
    const data = await lobby.call("invite", { name, ladder, length });
    say(`Invited ${data.to} to ${data.ladder}, ${fmtLength(data.length)}; waiting for an answer.`);
  });
});

function renderInvitations() {
  const box = $("invitations");
  if (state.invitations.size === 0) {
    box.replaceChildren();
    return;
  }
  box.replaceChildren(el("h3", {}, "Invitations"), el("ul", { class: "plain-list" },
    [...state.invitations.values()].map((inv) => el("li", { class: "invitation" },
      `${inv.from} invites you to ${inv.ladder}, ${fmtLength(inv.length)}. `,
      el("button", { type: "button", onclick: () => act(async () => {
        const match = await lobby.call("join", { name: inv.from });
        state.invitations.clear();
        renderInvitations();
        state.match = match;
        state.claim = null;
        renderMatch();
        say(`Match ${match.match} started: ${match.a} vs ${match.b} on ${match.ladder}.`);
      }) }, `Join ${inv.from}`), " ",
      el("button", { type: "button", class: "secondary", onclick: () => act(async () => {
        await lobby.call("decline", { name: inv.from });
        state.invitations.delete(inv.from);
        renderInvitations();
        say(`Declined ${inv.from}'s invitation.`);
      }) }, `Decline ${inv.from}`)))));
}

function renderMatch() {
  const panel = $("match-panel");
  const m = state.match;
  $("invite-form").hidden = Boolean(m);
  if (!m || !state.me) {
    panel.replaceChildren();
    return;
  }
  const opponent = m.a === state.me ? m.b : m.a;
  const parts = [
    el("h3", {}, "Your match"),
    el("p", {}, `Match ${m.match}: ${m.a} vs ${m.b} on ${m.ladder}, ${fmtLength(m.length)} — ${m.status}.`),
  ];
  const claim = state.claim && state.claim.match === m.match ? state.claim : null;
  if (m.status === "claimed" && claim && claim.by !== state.me) {
    const scores = claim.scores ? ` (${claim.scores[0]}–${claim.scores[1]})` : "";
    parts.push(el("p", { class: "notice" }, `${claim.by} claims a win${scores}.`),
      el("div", { class: "buttons" },
        el("button", { type: "button", onclick: () => act(async () => showFinished(await lobby.call("confirm", { match: m.match }))) }, "Confirm their win"),
        el("button", { type: "button", class: "secondary", onclick: () => act(async () => {
          const data = await lobby.call("dispute", { match: m.match });
          m.status = data.status;
          renderMatch();
          say(`You disputed match ${m.match}; a director will decide it.`);
        }) }, "Dispute")));
  } else if (m.status === "claimed") {
    parts.push(el("p", { class: "hint" }, `Waiting for ${opponent} to confirm or dispute your win.`));
  } else if (m.status === "disputed") {
    parts.push(el("p", { class: "hint" }, "Disputed: a director will decide this match."));
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
          say(`You reported a win in match ${m.match}; ${opponent} must confirm it.`);
        });
      } },
      el("label", {}, "Your score (optional) ", mine),
      el("label", {}, "Opponent's score (optional) ", theirs),
      el("button", { type: "submit" }, "Report a win")),
      el("div", { class: "buttons" },
        el("button", { type: "button", class: "danger", onclick: () => act(async () => showFinished(await lobby.call("resign"))) }, "Resign"),
        el("button", { type: "button", class: "secondary", onclick: () => act(async () => {
          const data = await lobby.call("abort");
          if (data.status === "aborted") {
            state.match = null;
            renderMatch();
            say(`Match ${data.match} aborted, unrated.`);
          } else {
            say(`You proposed to abort match ${data.match}; ${opponent} must agree.`);
          }
        }) }, "Abort (both must agree)")));
  }
  panel.replaceChildren(el("div", { class: "match" }, parts));
}

function showFinished(data) {
  if (state.match && state.match.match === data.match) {
    state.match = null;
    state.claim = null;
    renderMatch();
  }
  const mine = state.me && (data.winner === state.me || data.loser === state.me);
  if (!mine) return;
  const column = ratingColumn(data.ladder);
  const changes = data.changes.map((c) => el("li", { dataset: { player: c.player, after: String(c.after) } },
    `${c.player}: ${fmtValue(column, c.before)} → ${fmtValue(column, c.after)} (${fmtChange(column, c.change)})`));
  $("last-result").replaceChildren(
    el("h3", {}, `Match ${data.match} finished`),
    el("p", {}, `${data.winner} won (${data.how}) on ${data.ladder}, ${fmtLength(data.length)}${data.rated ? "." : "; unrated."}`),
    changes.length ? el("ul", { class: "plain-list" }, changes) : null);
  const own = data.changes.find((c) => c.player === state.me);
  say(`Match ${data.match}: ${data.winner} won.${own ? ` Your rating: ${fmtValue(column, own.after)} (${fmtChange(column, own.change)}).` : ""}`);
}

lobby.on("invited", (data) => {
  state.invitations.set(data.from, data);
  renderInvitations();
  say(`${data.from} invites you to ${data.ladder}, ${fmtLength(data.length)}.`);
});
lobby.on("declined", (data) => say(`${data.by} declined your invitation.`));
lobby.on("match_started", (data) => {
  state.match = data;
  state.claim = null;
  state.invitations.clear();
  renderInvitations();
  renderMatch();
  say(`Match ${data.match} started: ${data.a} vs ${data.b} on ${data.ladder}.`);
});
lobby.on("result_claimed", (data) => {
  state.claim = data;
  if (state.match && state.match.match === data.match) state.match.status = "claimed";
  renderMatch();
  say(`${data.by} claims a win in match ${data.match}: confirm or dispute it.`);
});
lobby.on("result_disputed", (data) => {
  if (state.match && state.match.match === data.match) state.match.status = "disputed";
  renderMatch();
  say(`Match ${data.match} is disputed by ${data.by}; a director will decide.`);
});
lobby.on("abort_requested", (data) => say(`${data.by} proposes to abort match ${data.match}; press “Abort” to agree.`));
lobby.on("match_aborted", (data) => {
  if (state.match && state.match.match === data.match) state.match = null;
  renderMatch();
  say(`Match ${data.match} was aborted, unrated.`);
});
lobby.on("match_finished", showFinished);
lobby.on("match_corrected", (data) => {
  if (state.match && state.match.match === data.match && data.status !== "finished") state.match = null;
  renderMatch();
  say(`A director corrected match ${data.match}: ${data.status}${data.winner ? `, won by ${data.winner}` : ""}.`);
});

// ---- live ladder pushes ---------------------------------------------------------------------

lobby.on("rating_changed", (data) => {
  if (state.ladders.get(data.ladder)?.rows) soon(`ladder:${data.ladder}`, () => loadLadder(data.ladder));
  if (state.profile && state.profile === data.player) soon("profile", () => openProfile(state.profile, { focus: false }), 120);
});
lobby.on("ladder_updated", (data) => {
  const ladder = state.ladders.get(data.ladder);
  if (!ladder || !ladder.rows) return;
  clearTimeout(timers.get(`ladder:${data.ladder}`));
  renderLadder(ladder, data.players);
  if (state.profile && data.players.some((r) => r.player === state.profile)) {
    soon("profile", () => openProfile(state.profile, { focus: false }), 120);
  }
});

$("ladder-filter").addEventListener("change", () => act(watchShown));

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
    `#${e.id} ${e.name} (${e.ladder}, ${e.date}, ${e.games} game${e.games === 1 ? "" : "s"})`)));
  if (keep && events.some((e) => String(e.id) === String(keep))) box.value = String(keep);
  $("no-events").hidden = events.length > 0;
  $("event-close").disabled = events.length === 0;
}

function formArgs(form) {
  const args = {};
  for (const [k, v] of new FormData(form)) if (typeof v === "string" && v.trim()) args[k] = v.trim();
  return args;
}

function logEvent(...nodes) {
  $("event-log").replaceChildren(...nodes);
}

$("event-create-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const form = ev.target;
  act(async () => {
    const e = await lobby.call("event create", formArgs(form));
    form.reset();
    await loadEvents(e.id);
    say(`Event #${e.id} “${e.name}” is open on ${e.ladder}.`);
  });
});

$("event-result-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const form = ev.target;
  act(async () => {
    const data = await lobby.call("event result", { event: selectedEvent(), ...formArgs(form) });
    form.reset();
    await loadEvents();
    say(`Recorded in event #${data.event}: ${data.side_a} ${data.score_a}–${data.score_b} ${data.side_b}${data.rated ? "" : " (unrated)"}.`);
    form.querySelector("input").focus();
  });
});

$("event-import-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const form = ev.target;
  const file = $("import-file").files[0];
  act(async () => {
    const event = selectedEvent();
    if (!file) throw new LobbyError("bad_request", "Choose a CSV file to import.");
    const csv = await new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result);
      reader.onerror = () => reject(new LobbyError("bad_request", `Could not read ${file.name}.`));
      reader.readAsText(file);
    });
    const data = await lobby.call("event import", { event, csv });
    form.reset();
    await loadEvents();
    say(`Imported ${data.imported} game${data.imported === 1 ? "" : "s"} into event #${data.event}.`);
  });
});

$("event-close").addEventListener("click", () => act(async () => {
  const data = await lobby.call("event close", { event: selectedEvent() });
  await loadEvents();
  const column = ratingColumn(data.ladder);
  logEvent(el("h3", {}, `Event #${data.id} “${data.name}” closed`),
    data.changes.length
      ? el("ul", { class: "plain-list" }, data.changes.map((c) => el("li", {},
        playerLink(c.player), `: ${c.before === null ? "new" : fmtValue(column, c.before)} → ${fmtValue(column, c.after)} (${fmtChange(column, c.change)})`)))
      : el("p", { class: "hint" }, "No ratings changed."));
  say(`Event #${data.id} closed; ${data.ladder} is rated.`);
}));

// ---- connection -----------------------------------------------------------------------------

lobby.on("open", (hello) => {
  $("connection").textContent = `Connected to ${hello.server} ${hello.version}.`;
  $("connection").className = "connection ok";
  const again = state.connectedOnce;
  state.connectedOnce = true;
  act(async () => {
    if (again && state.credentials) {
      try {
        signedIn(await lobby.call("login", state.credentials));
      } catch (err) {
        state.credentials = null;
        signedOut();
        throw err;
      }
    } else if (again) {
      signedOut();
    }
    await loadLadders();
    await loadWho();
    const wanted = profileFromHash() || (again ? state.profile : null);
    if (wanted) await openProfile(wanted, { focus: false });
    if (again && !state.replaced) say("Reconnected.");
    state.replaced = false;
  });
});

lobby.on("close", ({ retryIn }) => {
  $("connection").textContent = retryIn < 1000 ? "Connection lost; reconnecting…"
    : `Connection lost; reconnecting in ${Math.round(retryIn / 1000)} s…`;
  $("connection").className = "connection lost";
});

lobby.connect();
