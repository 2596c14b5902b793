// Wide tables scroll sideways inside their box (.table-wrap), never the page. A box that
// scrolls shows a hint above it and is a Tab stop (so the keyboard can scroll it); a box
// that does not scroll, or holds an empty table, is not.

import { el } from "./dom.js";

function update(wrap) {
  const rows = wrap.querySelector("tbody tr");
  const scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
  wrap.classList.toggle("scrolls", scrolls);
  if (scrolls && rows) wrap.setAttribute("tabindex", "0");
  else wrap.removeAttribute("tabindex");
  let hint = wrap.previousElementSibling;
  if (!hint || !hint.classList.contains("scroll-hint")) {
    if (!scrolls) return;
    hint = el("p", { class: "scroll-hint", "aria-hidden": "true" }, "Scroll sideways for more →");
    wrap.before(hint);
  }
  hint.hidden = !scrolls || wrap.offsetParent === null;
}

// The box and its table are both observed: a table that grows or shrinks inside a box of
// the same size changes nothing the box's own observer would see.
const resized = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const wrap = entry.target.closest(".table-wrap");
    if (wrap) update(wrap);
  }
});
const seen = new WeakSet();

// Watch every .table-wrap under `root` (call again after a render adds new ones).
export function watchTables(root = document) {
  for (const wrap of root.querySelectorAll(".table-wrap")) {
    if (!seen.has(wrap)) {
      seen.add(wrap);
      resized.observe(wrap);
      const table = wrap.querySelector("table");
      if (table) resized.observe(table);
    }
    update(wrap);
  }
}
