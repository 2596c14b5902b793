// What a rating change was about, as the history tells it: against whom, with whom, how it
// went and by how much, how long, on what ladder and at what event. Also the rating changes
// a closed event made. Every text reaches the DOM as a text node (dom.js).

import { el } from "./dom.js";

const list = (names) => (names.length > 2
  ? `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`
  : names.join(" and "));

// "bob", "carol and dave", "with bob: carol and dave" (a doubles partner first).
export function against(e) {
  const opponents = e.opponents || [];
  const partners = e.partners || [];
  const them = opponents.length ? list(opponents) : "–";
  return partners.length ? `with ${list(partners)}: ${them}` : them;
}

// "won 3–1", "lost", "drawn 380–380", an event's "1 won, 1 lost"; "(unrated)" when it did
// not count.
export function outcome(e) {
  const score = Array.isArray(e.score) ? ` ${e.score[0]}–${e.score[1]}` : "";
  const text = e.result ? `${e.result}${score}` : "–";
  return e.rated === false ? `${text} (unrated)` : text;
}

export function lengthOf(e) {
  if (e.length === null || e.length === undefined) return "–";
  if (e.length === "unlimited") return "unlimited";
  return `${e.length} point${e.length === 1 ? "" : "s"}`;
}

export const eventOf = (e) => (e.event ? `#${e.event.id} ${e.event.name ?? ""}`.trim() : "–");

// A ladder's history, one row a change: `column` is the ladder's rating column, `fmtValue`
// and `fmtChange` the page's formats.
export function historyTable(entries, { column, fmtValue, fmtChange }) {
  const heads = ["When (UTC)", "Against", "Result", "Length", "Event", "Match", "Before", "After", "Change"];
  return el("table", { class: "history-table" },
    el("thead", {}, el("tr", {}, heads.map((t) => el("th", { scope: "col" }, t)))),
    el("tbody", {}, entries.map((e) => el("tr", { class: e.rated === false ? "inactive" : null, dataset: { match: e.match ?? "", event: e.event ? String(e.event.id) : "" } },
      el("td", {}, e.at.replace("T", " ").replace("Z", "")),
      el("td", { dataset: { key: "against" } }, against(e)),
      el("td", { dataset: { key: "result" } }, outcome(e)),
      el("td", { dataset: { key: "length" } }, lengthOf(e)),
      el("td", { dataset: { key: "event" } }, eventOf(e)),
      el("td", { class: "num" }, e.match === null || e.match === undefined ? "–" : String(e.match)),
      el("td", { class: "num" }, fmtValue(column, e.before)),
      el("td", { class: "num" }, fmtValue(column, e.after)),
      el("td", { class: "num", dataset: { key: "change" } }, fmtChange(column, e.change))))));
}

// A closed event's rating changes (`event show`'s `changes`), one row a player.
export function changesTable(event, { column, fmtValue, fmtChange, playerLink }) {
  if (!event.changes || !event.changes.length) return null;
  return el("div", { class: "table-wrap", role: "region", "aria-label": `Rating changes of ${event.name}` },
    el("table", { class: "changes-table" },
      el("caption", {}, "Rating changes"),
      el("thead", {}, el("tr", {}, ["Player", "Before", "After", "Change"].map((t) => el("th", { scope: "col" }, t)))),
      el("tbody", {}, event.changes.map((c) => el("tr", { dataset: { player: c.player, after: String(c.after) } },
        el("th", { scope: "row" }, playerLink(c.player)),
        el("td", { class: "num" }, fmtValue(column, c.before)),
        el("td", { class: "num" }, fmtValue(column, c.after)),
        el("td", { class: "num" }, fmtChange(column, c.change)))))));
}
