// A ladder's evaluation (the lobby's `evaluate LADDER`): how well its rating system has
// predicted its results, beside a 0.5 baseline and the players' win rates. A panel under the
// ladder, asked for when opened (the first ask on a big ladder takes seconds): the scores by
// system in a table, and as `matchlobby evaluate --chart` draws them, the calibration chart and
// the log-loss by system as bars (uPlot, as the rating histories).

import { el } from "./dom.js";
import { watchTables } from "./tables.js";

const COLORS = ["#1f5fa8", "#b8560f", "#2e7d32", "#8e24aa", "#c62828", "#00838f"];
const DIAGONAL = "#888888";

// What a row is called on the page.
export function rowName(row, ladder) {
  if (row.system === "baseline") return "Always 0.5";
  if (row.system === "win_rate") return "Win rates so far";
  const name = row.system === ladder.system ? ladder.title : row.system;
  const options = Object.entries(row.variant || {}).map(([k, v]) => `${k}=${v}`);
  return options.length ? `${name} (${options.join(", ")})` : name;
}

const fmt = (v, places = 4) => (v === null || v === undefined ? "–" : v.toFixed(places));
const percent = (v) => (v === null || v === undefined ? "–" : `${(100 * v).toFixed(1)} %`);

function scoresTable(report, ladder, id) {
  return el("div", { class: "table-wrap", role: "region", "aria-label": `Scores by system on ${ladder.name}` },
    el("table", { class: "evaluation-table", id },
      el("caption", {}, "Scores by system (lower log-loss and Brier score are better)"),
      el("thead", {}, el("tr", {},
        el("th", { scope: "col" }, "System"),
        el("th", { scope: "col", class: "num" }, "Games"),
        el("th", { scope: "col", class: "num" }, "Log-loss"),
        el("th", { scope: "col", class: "num" }, "Brier score"),
        el("th", { scope: "col", class: "num" }, "Accuracy"),
        el("th", { scope: "col", class: "num" }, "Log-loss after 20 games"))),
      el("tbody", {}, report.systems.map((r) => el("tr", { dataset: { system: r.system } },
        el("th", { scope: "row" }, rowName(r, ladder)),
        el("td", { class: "num", dataset: { key: "games" } }, String(r.games)),
        el("td", { class: "num", dataset: { key: "log_loss" } }, fmt(r.log_loss)),
        el("td", { class: "num", dataset: { key: "brier" } }, fmt(r.brier)),
        el("td", { class: "num", dataset: { key: "accuracy" } }, percent(r.accuracy)),
        el("td", { class: "num", dataset: { key: "after_20" } }, fmt(r.after_20 && r.after_20.log_loss)))))));
}

// The points of the chart, on one x axis as uPlot wants: every bin's mean prediction of every
// row, each row's observed share where it has that bin (else null, the line spans the gap),
// and the diagonal.
export function calibrationData(report) {
  const xs = [...new Set([0, 1, ...report.systems.flatMap((r) => r.calibration
    .filter((b) => b.games > 0).map((b) => b.predicted))])].sort((a, b) => a - b);
  const series = report.systems.map((r) => {
    const at = new Map(r.calibration.filter((b) => b.games > 0).map((b) => [b.predicted, b.observed]));
    return xs.map((x) => (at.has(x) ? at.get(x) : null));
  });
  return [xs, xs.slice(), ...series];
}

function chartWidth(node) {
  return Math.max(240, Math.min(560, Math.floor(node.clientWidth || 320)));
}

function drawCalibration(report, ladder, node) {
  const opts = {
    width: chartWidth(node),
    height: 280,
    scales: { x: { time: false, range: [0, 1] }, y: { range: [0, 1] } },
    series: [
      { label: "Predicted", value: (u, v) => fmt(v, 3) },
      { label: "Perfectly calibrated", stroke: DIAGONAL, dash: [6, 4], width: 1, points: { show: false } },
      ...report.systems.map((r, i) => ({
        label: rowName(r, ladder),
        stroke: COLORS[i % COLORS.length],
        width: 2,
        spanGaps: true,
        points: { show: true, size: 7, fill: COLORS[i % COLORS.length] },
        value: (u, v) => fmt(v, 3),
      })),
    ],
    axes: [
      { label: "Predicted chance that side A wins", values: (u, vals) => vals.map((v) => v.toFixed(1)) },
      { label: "Share side A won", size: 56, values: (u, vals) => vals.map((v) => v.toFixed(1)) },
    ],
  };
  return new window.uPlot(opts, calibrationData(report), node);
}

// The bars: one series per row, each a bar at its own place on the x axis (null elsewhere), in
// the row's colour of the calibration chart, so the legend names them as there.
export function lossData(report) {
  const xs = report.systems.map((r, i) => i);
  return [xs, ...report.systems.map((r, i) => xs.map((x) => (x === i ? r.log_loss : null)))];
}

function drawLosses(report, ladder, node) {
  const top = Math.max(...report.systems.map((r) => r.log_loss || 0));
  const opts = {
    width: Math.min(chartWidth(node), 360),
    height: 220,
    scales: {
      x: { time: false, range: [-0.5, report.systems.length - 0.5] },
      y: { range: [0, top > 0 ? top * 1.15 : 1] },
    },
    cursor: { points: { show: false } },
    series: [
      { label: "System", value: (u, v) => (v === null || v === undefined ? "–" : rowName(report.systems[v], ladder)) },
      ...report.systems.map((r, i) => ({
        label: rowName(r, ladder),
        stroke: COLORS[i % COLORS.length],
        fill: COLORS[i % COLORS.length],
        width: 0,
        paths: window.uPlot.paths.bars({ size: [0.7, 80] }),
        points: { show: false },
        value: (u, v) => fmt(v),
      })),
    ],
    axes: [
      { splits: () => [], values: () => [], grid: { show: false }, ticks: { show: false }, size: 8 },
      { label: "Log-loss (lower is better)", size: 56, values: (u, vals) => vals.map((v) => v.toFixed(2)) },
    ],
  };
  return new window.uPlot(opts, lossData(report), node);
}

// Fewer scored games than this and a log-loss says little: a few lucky guesses beat a coin.
export const ENOUGH_GAMES = 100;

// The sentence above the chart: the system's log-loss beside the 0.5 baseline's, over how many
// games, and a verdict only when there are enough of them.
function verdict(report, ladder) {
  const own = report.systems[0];
  const base = report.systems.find((r) => r.system === "baseline");
  if (!own || !own.games) return "No rated game has been scored on this ladder yet.";
  const name = rowName(own, ladder);
  const hasBase = base && base.log_loss !== null;
  const scores = `Over ${own.games} scored game${own.games === 1 ? "" : "s"}, ${name} predicted with a log-loss of ` +
    `${fmt(own.log_loss)}${hasBase ? ` (always saying 0.5: ${fmt(base.log_loss)})` : ""}`;
  if (own.games < ENOUGH_GAMES) {
    return `${scores}. That is too few games to tell whether it predicts better than a coin ` +
      `(it takes about ${ENOUGH_GAMES}).`;
  }
  if (!hasBase) return `${scores}.`;
  return `${scores}, ${own.log_loss < base.log_loss ? "better" : "no better"} than a coin.`;
}

let panels = 0; // for the ids that tie a panel's bar chart to its table

// The panel for one ladder (`ladder`: { name, system, title }), asking `lobby` (js/lobby.js).
// Results that come in while it is open are not worked in by themselves (every ask costs the
// asker's read budget): the panel says so, and "Ask again" does it.
export function evaluationPanel(ladder, lobby) {
  const status = el("p", { class: "hint", role: "status" });
  const body = el("div", { class: "evaluation-body" });
  const tableId = `evaluation-scores-${++panels}`;
  let charts = [];
  let asked = 0;
  let shown = false; // a report is on screen

  function changed(data) {
    if (!shown || !data || data.ladder !== ladder.name) return;
    status.textContent = "New results have come in since: “Ask again” counts them.";
  }
  for (const push of ["rating_changed", "ladder_updated", "match_corrected"]) lobby.on(push, changed);

  async function load() {
    const mine = ++asked;
    status.textContent = "Working out how well each system predicted…";
    try {
      const report = await lobby.call("evaluate", { ladder: ladder.name });
      if (mine !== asked) return;
      for (const c of charts) c.destroy();
      charts = [];
      const plot = el("div", { class: "calibration-plot" });
      const figure = el("figure", { class: "calibration", dataset: { ladder: ladder.name } },
        el("figcaption", {}, "Calibration: the share of games side A won against the chance it was given, " +
          "in ten bins; a well-calibrated system follows the diagonal"),
        plot);
      const games = report.systems[0] ? report.systems[0].games : 0;
      const bars = el("div", { class: "loss-plot", role: "img", "aria-describedby": tableId,
        "aria-label": "Log-loss by system as bars, the numbers in the scores table" });
      const losses = el("figure", { class: "losses", dataset: { ladder: ladder.name } },
        el("figcaption", {}, `Log-loss by system (${games} game${games === 1 ? "" : "s"}): ` +
          "the shorter the bar, the better it predicted"),
        bars);
      body.replaceChildren(el("p", { class: "verdict" }, verdict(report, ladder)),
        scoresTable(report, ladder, tableId), el("div", { class: "evaluation-charts" }, figure, losses));
      body.dataset.games = String(games);
      status.textContent = "";
      shown = true;
      watchTables(body);
      if (report.systems.some((r) => r.games > 0)) {
        charts = [drawCalibration(report, ladder, plot), drawLosses(report, ladder, bars)];
      } else {
        figure.hidden = true;
        losses.hidden = true;
      }
    } catch (e) {
      if (mine === asked) status.textContent = `Could not evaluate ${ladder.name}: ${e.message || e}`;
    }
  }

  const refresh = el("button", { type: "button", class: "small secondary", onclick: load }, "Ask again");
  const panel = el("details", { class: "evaluation", dataset: { ladder: ladder.name } },
    el("summary", {}, `How well ${ladder.title} predicts ${ladder.name}`),
    el("p", { class: "hint" }, `Before each rated game, the chance ${ladder.title} gave side A, scored against ` +
      "what happened, beside always saying 0.5 and the players' win rates so far. ", refresh),
    status, body);
  panel.addEventListener("toggle", () => { if (panel.open) load(); });
  return panel;
}
