// The commands of the lobby's plugins, offered in forms of their own: the page knows nothing of
// them but what `help` says (a command's usage, who may run it, its summary). Each gets a form
// with a field per argument and flag of its usage and a Run button; the reply is shown whatever
// its shape (nested objects as term lists, a list of like objects as a table), a refusal in the
// form's feedback line. Every text reaches the DOM through el() (text nodes).

import { $, el } from "./dom.js";
import { watchTables } from "./tables.js";

// The commands the page has views of its own for (the lobby's and the ratings plugin's): every
// other command `help` lists is a plugin's, offered here.
export const OWN = new Set([
  "help", "register", "login", "resume", "logout", "who", "whois", "watch", "unwatch", "tell",
  "say", "shout", "shouts", "block", "unblock", "mute", "unmute", "stake", "invite",
  "invitations", "uninvite", "join", "decline", "resign", "ready on", "ready off", "seek",
  "unseek", "seeks", "report win", "confirm", "dispute", "claim", "abort", "event create",
  "event result", "event import", "event close", "events", "event show", "disputes", "void",
  "adjudicate", "player remove", "ban", "unban", "rating", "ladder", "history", "ladders", "evaluate",
]);

const WHO = { anyone: "Anyone", player: "Logged-in players", admin: "Directors" };

// A usage line's arguments and flags ("h2h A B", "streak NAME [--all] [--since DATE]"): each
// with the key it is sent by (its placeholder in lower case; a flag's name), as docs/PROTOCOL.md
// names them.
export function parseUsage(command, usage) {
  const rest = usage.slice(command.length).trim();
  const fields = [];
  for (const m of rest.matchAll(/\[--([a-z0-9_-]+)(?: ([A-Z0-9_]+))?\]|\[([A-Z0-9_]+)\]|([A-Z0-9_]+)/g)) {
    if (m[1]) fields.push({ key: m[1], label: m[1], flag: true, boolean: !m[2], optional: true, value: m[2] });
    else fields.push({ key: (m[3] || m[4]).toLowerCase(), label: m[3] || m[4], optional: Boolean(m[3]) });
  }
  return fields;
}

const words = (label) => {
  const text = label.replace(/[_-]/g, " ").toLowerCase();
  return text.length <= 1 ? text.toUpperCase() : text[0].toUpperCase() + text.slice(1);
};

const isPlain = (v) => v === null || typeof v !== "object";

function plainText(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  return String(v);
}

// A list's item as table cells: its plain values, a plain list joined, and a nested object of
// plain values spread over columns "key sub"; null when it holds anything deeper.
function cellsOf(item) {
  if (isPlain(item) || Array.isArray(item)) return null;
  const cells = new Map();
  for (const [key, value] of Object.entries(item)) {
    if (isPlain(value)) cells.set(key, value);
    else if (Array.isArray(value) && value.every(isPlain)) cells.set(key, value.map(plainText).join(", "));
    else if (!Array.isArray(value) && Object.values(value).every(isPlain)) {
      for (const [sub, v] of Object.entries(value)) cells.set(`${key} ${sub}`, v);
    } else return null;
  }
  return cells;
}

function tableOf(items) {
  const rows = items.map(cellsOf);
  if (rows.some((r) => r === null)) return null;
  const heads = [...rows[0].keys()];
  if (rows.some((r) => r.size !== heads.length || heads.some((h) => !r.has(h)))) return null;
  const numeric = heads.map((h) => rows.every((r) => typeof r.get(h) === "number"));
  return el("div", { class: "table-wrap" }, el("table", { class: "plugin-table" },
    el("thead", {}, el("tr", {}, heads.map((h, i) => el("th", { scope: "col", class: numeric[i] ? "num" : null }, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, heads.map((h, i) =>
      el("td", { class: numeric[i] ? "num" : null }, plainText(r.get(h)))))))));
}

// Any decoded JSON value as nodes: nothing dropped, nothing shown as raw JSON.
export function replyNode(value) {
  if (isPlain(value)) return el("span", {}, plainText(value));
  if (Array.isArray(value)) {
    if (value.length === 0) return el("span", {}, "None");
    if (value.every(isPlain)) return el("span", {}, value.map(plainText).join(", "));
    return tableOf(value) || el("ul", { class: "plugin-list" }, value.map((v) => el("li", {}, replyNode(v))));
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return el("span", {}, "Done.");
  return el("dl", { class: "plugin-reply-fields" },
    entries.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, replyNode(v))]));
}

function fieldNode(id, f) {
  const label = `${words(f.label)}${f.optional && !f.boolean ? " (optional)" : ""}`;
  if (f.boolean) {
    return el("label", { class: "check" }, el("input", { id, name: f.key, type: "checkbox" }), ` ${words(f.label)}`);
  }
  return el("label", {}, `${label} `, el("input", {
    id, name: f.key, required: !f.optional, autocomplete: "off",
  }));
}

function commandForm(command, { lobby, act }) {
  const fields = parseUsage(command.command, command.usage);
  const slug = command.command.replace(/[^a-z0-9]+/g, "-");
  const feedback = el("p", { class: "feedback", role: "status" });
  const reply = el("div", { class: "plugin-reply", "aria-live": "polite" });
  const form = el("form", {
    class: "stack-form plugin-command", dataset: { command: command.command },
    "aria-labelledby": `plugin-${slug}-heading`,
  },
  el("h3", { id: `plugin-${slug}-heading` }, command.usage),
  el("p", { class: "hint" }, `${command.summary} For: ${WHO[command.who] || command.who}.`),
  fields.map((f) => fieldNode(`plugin-${slug}-${f.key}`, f)),
  el("button", { type: "submit" }, `Run ${command.command}`),
  feedback, reply);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const args = {};
    for (const f of fields) {
      const input = form.elements.namedItem(f.key);
      if (f.boolean) {
        if (input.checked) args[f.key] = true;
      } else if (input.value.trim() !== "") args[f.key] = input.value.trim();
    }
    reply.replaceChildren();
    await act(async () => {
      reply.replaceChildren(replyNode(await lobby.call(command.command, args)));
      watchTables(reply);
    }, { where: feedback });
  });
  return form;
}

// `load()` asks `help` again (on every connection: the server's plugins may have changed)
// and offers the commands the page has no view of.
export function setUpPluginCommands({ lobby, act }) {
  async function load() {
    const { commands } = await lobby.call("help");
    const theirs = commands.filter((c) => !OWN.has(c.command));
    $("plugin-commands-body").replaceChildren(...theirs.map((c) => commandForm(c, { lobby, act })));
    $("plugin-commands").hidden = theirs.length === 0;
  }
  return { load };
}
