// Building the page's nodes: every text reaches the DOM as a text node, never as HTML.

export const $ = (id) => document.getElementById(id);

export function el(tag, props = {}, ...children) {
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

export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

// "20:58 UTC" for an instant today, "2026-12-02 20:58 UTC" otherwise.
export function fmtInstant(iso, now = new Date()) {
  const text = iso.replace("T", " ").replace(/:\d\dZ$/, " UTC").replace(/Z$/, " UTC");
  return iso.slice(0, 10) === now.toISOString().slice(0, 10) ? text.slice(11) : text;
}

// When an invitation lapses, as people read it: "expires in 4 min (20:58 UTC)".
export function fmtExpiry(iso, now = Date.now()) {
  if (!iso) return "does not expire";
  const left = Math.max(0, Math.round((Date.parse(iso) - now) / 1000));
  const span = left >= 90 ? `${Math.round(left / 60)} min` : `${left} s`;
  return `expires in ${span} (${fmtInstant(iso)})`;
}
