// Where a rating history's entries sit on its chart's time axis. A result of an event is
// placed at the event's date (noon UTC), not at the moment it was entered or the event closed;
// entries closer together than the axis can show (many matches within seconds, an event's
// games on one day) are spread out in their order, so that they read as a line, not a stack.

const EVENT_TIME = "T12:00:00Z";

function when(entry, eventDates) {
  const date = entry.cause && entry.cause.event !== undefined ? eventDates.get(entry.cause.event) : undefined;
  return date ? Date.parse(`${date}${EVENT_TIME}`) / 1000 : Date.parse(entry.at) / 1000;
}

// The entries in the order of their place on the axis (their order in the log when two are at
// the same time), each with its x (seconds) and the time it really stands for (seconds).
// `minSpan`: the least span of an axis (seconds), which the spread counts on.
export function chartTimes(entries, eventDates, minSpan) {
  const placed = entries.map((e, order) => ({ entry: e, real: when(e, eventDates), order }))
    .sort((p, q) => p.real - q.real || p.order - q.order);
  if (!placed.length) return [];
  const span = Math.max(placed[placed.length - 1].real - placed[0].real, minSpan);
  const gap = span / (2 * placed.length); // half the axis at most, were all at one instant
  let last = -Infinity;
  for (const p of placed) {
    p.x = Math.max(p.real, last + gap);
    last = p.x;
  }
  return placed;
}

// What the chart's cursor says for an entry: the event's date, or the instant in UTC.
export function whenText(entry, eventDates) {
  const date = entry.cause && entry.cause.event !== undefined ? eventDates.get(entry.cause.event) : undefined;
  if (date) return `${date} (event ${entry.cause.event})`;
  return `${entry.at.slice(0, 16).replace("T", " ")} UTC`;
}
