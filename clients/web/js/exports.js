// Files made from what the server sent: an event's games as a results file (the CSV that
// `event import` and `matchlobby rate` read), an event or a rating history as JSON, and a
// rating history as CSV. Saved through a temporary link, so nothing leaves the browser.

export const RESULTS_HEADER = ["event", "date", "side_a", "side_b", "score_a", "score_b", "length", "rated"];

// What a spreadsheet runs as a formula when a cell starts with it (after spaces): OWASP's list
// for CSV injection, the one `matchlobby rate` escapes (`=HYPERLINK(...)` in an event name, a
// player named `-A1-B1x`).
const FORMULA_START = ["=", "+", "-", "@", "\t", "\r"];

// Whether a text cell gets a leading "'", which a spreadsheet shows as text: it starts like a
// formula, or with "'" before a text that would get one (so that `event import` and
// `matchlobby rate`, which take that "'" off again, read back exactly what was written).
export function needsEscape(text) {
  const rest = text.replace(/^ +/, "");
  if (FORMULA_START.some((c) => rest.startsWith(c))) return true;
  return rest.startsWith("'") && needsEscape(rest.slice(1));
}

// One CSV cell: text made inert (numbers stay numbers, a negative one included), then quoted
// when it holds a comma, a quote or a line break.
export function cell(value) {
  let text = value === null || value === undefined ? "" : String(value);
  if (typeof value === "string" && needsEscape(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const line = (cells) => cells.map(cell).join(",");

// The event's games (voided ones left out) in the results-file format.
export function resultsCsv(event) {
  const rows = event.games.filter((g) => g.status === "finished").map((g) => line([
    event.name, g.date || event.date, g.side_a, g.side_b, g.score_a, g.score_b,
    g.length === null || g.length === undefined ? "unlimited" : g.length,
    g.unrated ? `no:${g.unrated}` : ""]));
  return [line(RESULTS_HEADER), ...rows].join("\n") + "\n";
}

export function eventJson(event) {
  const { next, from, ...rest } = event;
  return JSON.stringify(rest, null, 2) + "\n";
}

// A rating history, a row a change, with its story: opponents (and partners) joined by "+"
// as a side is, the result, the player's score and the other side's, the length, the event,
// whether it was rated.
export const HISTORY_HEADER = ["player", "ladder", "at", "before", "after", "change", "match", "event",
  "event_name", "opponents", "partners", "result", "score", "score_against", "length", "how", "rated"];

export function historyCsv(player, entries) {
  const rows = entries.map((e) => line([player, e.ladder, e.at, e.before, e.after, e.change,
    e.cause.match ?? "", e.cause.event ?? "", e.event?.name ?? "", (e.opponents || []).join("+"),
    (e.partners || []).join("+"), e.result ?? "", e.score?.[0] ?? "", e.score?.[1] ?? "",
    e.length ?? "", e.how ?? "", e.rated !== false]));
  return [line(HISTORY_HEADER), ...rows].join("\n") + "\n";
}

export function historyJson(player, entries) {
  return JSON.stringify({ player, entries }, null, 2) + "\n";
}

// A file name from free text: letters, digits, "-" and "_" only.
export function fileName(...parts) {
  return parts.map((p) => String(p).replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-|-$/g, "")).filter(Boolean).join("-");
}

export function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
