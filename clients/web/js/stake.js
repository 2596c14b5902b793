// What a match puts at stake (the server's `stake` object), shown as a small table:
// each player's rating, chance to win, and the change if they win or lose.

import { el } from "./dom.js";

const percent = (p) => `${(100 * p).toFixed(p > 0.995 || p < 0.005 ? 1 : 0)}%`;

// `fmt(value)` and `fmtChange(delta)` show a rating the way the ladder does.
export function stakeTable(stake, { fmt, fmtChange, caption = "At stake" }) {
  if (!stake) return el("p", { class: "hint stake-none" }, "Nothing at stake: an unrated match.");
  return el("div", { class: "table-wrap stake", dataset: { ladder: stake.ladder, length: String(stake.length) } },
    el("table", {},
      el("caption", {}, `${caption} (${stake.ladder}, ${stake.length} point${stake.length === 1 ? "" : "s"}): `
        + "each player's chance to win and rating change if they win or lose"),
      el("thead", {}, el("tr", {}, ["Player", "Rating", "Chance", "Win", "Loss"]
        .map((t, i) => el("th", { scope: "col", class: i ? "num" : null }, t)))),
      el("tbody", {}, stake.players.map((p) => el("tr", { dataset: { player: p.player } },
        el("th", { scope: "row" }, p.player),
        el("td", { class: "num", dataset: { key: "rating" } }, fmt(p.rating)),
        el("td", { class: "num", dataset: { key: "chance" } }, percent(p.chance)),
        el("td", { class: "num", dataset: { key: "win" } }, fmtChange(p.win)),
        el("td", { class: "num", dataset: { key: "loss" } }, fmtChange(p.loss)))))));
}
