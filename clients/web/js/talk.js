// Talk: the lobby's shouts and one's tells in a small chat panel, and the live match's own
// conversation under the match. What people typed reaches the page as text nodes (el),
// never as markup: "<b>" shows as the three characters it is.

import { $, el, fmtInstant } from "./dom.js";

const SHOWN_SHOUTS = 20; // asked for on arriving: what the lobby said lately
const KEPT_LINES = 100; // a log keeps this many lines, the latest

// One line of a log: who (and how), then what they said.
function line(kind, who, text, at = null) {
  return el("p", { class: `talk-line ${kind}` },
    at ? el("span", { class: "talk-at" }, fmtInstant(at).replace(" UTC", ""), " ") : null,
    el("span", { class: "talk-who" }, who), " ",
    el("span", { class: "talk-text" }, text));
}

function append(log, node) {
  log.append(node);
  while (log.children.length > KEPT_LINES) log.firstElementChild.remove();
  log.scrollTop = log.scrollHeight;
}

// The page's own helpers come in `ctx`; returns what the page calls when the login or the
// match changes (`refresh`).
export function setUpTalk({ lobby, act, state }) {
  const log = $("talk-log");
  const matchLog = $("match-talk-log");
  const shouts = new Set(); // ids of the shouts on the page
  let matchShown = null; // the match whose conversation is on the page
  let reader = state.me; // whose tells the log shows

  function showEmpty() {
    $("talk-empty").hidden = log.children.length > 0;
  }

  function shout(s) {
    if (shouts.has(s.id)) return;
    shouts.add(s.id);
    append(log, line("shout", s.from === state.me ? "You shout:" : `${s.from} shouts:`, s.text, s.at));
    showEmpty();
  }

  // On arriving (and after a reconnect): what was shouted lately, those not shown yet.
  async function loadShouts() {
    const data = await lobby.call("shouts", { count: SHOWN_SHOUTS });
    for (const s of data.shouts) shout(s);
    showEmpty();
  }

  // Whom this login blocks, each with an Unblock button.
  function renderBlocked(names) {
    $("blocked-list").replaceChildren(...names.map((name) => el("li", { class: "blocked", dataset: { player: name } },
      el("span", {}, name), " ",
      el("button", { type: "button", class: "small secondary", onclick: () => act(async () => {
        await lobby.call("unblock", { name });
        await loadBlocked();
      }, { where: $("block-feedback") }) }, `Unblock ${name}`))));
  }

  async function loadBlocked() {
    const { blocking } = await lobby.call("block");
    renderBlocked(blocking);
  }

  function refresh() {
    if (state.me !== reader) { // another login (or none): the last one's tells go
      reader = state.me;
      for (const node of log.querySelectorAll(".tell")) node.remove();
      showEmpty();
      renderBlocked([]);
      if (state.me) act(loadBlocked, { quiet: true });
    }
    const playing = Boolean(state.me && state.match);
    $("talk-forms").hidden = !state.me;
    $("talk-guest").hidden = Boolean(state.me);
    $("match-talk").hidden = !playing;
    const id = playing ? state.match.match : null;
    if (id !== matchShown) {
      matchShown = id;
      matchLog.replaceChildren();
    }
  }

  lobby.on("shouted", shout);
  lobby.on("told", (d) => {
    append(log, line("tell", `${d.from} tells you:`, d.text));
    showEmpty();
  });
  lobby.on("said", (d) => {
    if (state.match && d.match === state.match.match) append(matchLog, line("say", `${d.from}:`, d.text));
  });
  lobby.on("muted", (d) => {
    const until = d.until ? `until ${fmtInstant(d.until)}` : "until an admin unmutes you";
    const text = d.muted ? `${d.by} muted you ${until}: you cannot tell, say or shout meanwhile.`
      : `${d.by} unmuted you: you may tell, say and shout again.`;
    $("talk-feedback").textContent = text;
    $("talk-feedback").className = `feedback ${d.muted ? "error" : "info"}`;
  });
  lobby.on("open", () => act(loadShouts, { quiet: true }));

  // A form's message sent by `send(text)`; the box is emptied once the server took it.
  function sending(formId, input, feedback, send) {
    $(formId).addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      act(async () => {
        await send(text);
        input.value = "";
      }, { where: feedback });
    });
  }

  sending("shout-form", $("shout-text"), $("talk-feedback"), async (text) => {
    shout(await lobby.call("shout", { text }));
  });
  sending("tell-form", $("tell-text"), $("talk-feedback"), async (text) => {
    const data = await lobby.call("tell", { name: $("tell-name").value.trim(), text });
    append(log, line("tell mine", `You tell ${data.to}:`, data.text));
    showEmpty();
  });
  sending("say-form", $("say-text"), $("say-feedback"), async (text) => {
    const data = await lobby.call("say", { text });
    append(matchLog, line("say mine", "You:", data.text));
  });

  $("block-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = $("block-name");
    act(async () => {
      const data = await lobby.call("block", { name: input.value.trim() });
      input.value = "";
      await loadBlocked();
      $("block-feedback").textContent = `You block ${data.player}.`;
    }, { where: $("block-feedback") });
  });

  refresh();
  return { refresh };
}
