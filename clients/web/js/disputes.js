// Disputes: a disputed match waits for an admin while its players play on. The desk lists
// every one with how long it has waited; a player sees their own next to the play panel,
// which stays open for other matches. An admin hears of a new one as a player hears of an
// invitation (the page's title, a tone, a notification when allowed).

import { confirmStep } from "./desk.js";
import { $, el, fmtInstant, plural } from "./dom.js";

const AGE_TICK_MS = 30000; // the desk's ages move on this often

// How long a dispute has waited, as people say it: "just now", "12 min", "3 h 5 min", "2 days".
export function fmtAge(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return "for a while";
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return "just now";
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 24) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  const days = Math.floor(h / 24);
  return h % 24 ? `${plural(days, "day")} ${h % 24} h` : plural(days, "day");
}

// The page's own helpers come in `ctx`; returns what the rest of the page calls.
// `ctx.box()` is where the desk lists them (the desk's "Disputes" container).
export function setUpDisputes(ctx) {
  const { lobby, act, say, alerts, fmtLength, state, renderMatch } = ctx;
  const box = ctx.box || (() => $("disputes"));
  const mine = new Map(); // this player's disputed matches waiting for an admin, by id
  let fetched = Date.now(); // when the desk's ages were given

  // ---- the desk (admins) ----------------------------------------------------------------

  // Every disputed match the lobby holds, its players online or not.
  async function findDisputes() {
    const { disputes } = await lobby.call("disputes");
    state.disputes = new Map(disputes.map((m) => [m.match, m]));
    fetched = Date.now();
    renderDisputes();
  }

  function waited(m) {
    const age = typeof m.age === "number" ? m.age + (Date.now() - fetched) / 1000 : null;
    return m.since ? `waiting ${fmtAge(age)} (since ${fmtInstant(m.since)})` : "waiting";
  }

  function renderDisputes() {
    alerts.setDisputes(state.role === "admin" ? state.disputes.size : 0);
    const target = box();
    if (!target) return;
    if (state.disputes.size === 0) {
      target.replaceChildren(el("p", { class: "hint" }, "No disputed matches."));
      return;
    }
    const oldest = [...state.disputes.values()].sort((x, y) => x.match - y.match);
    target.replaceChildren(el("ul", { class: "plain-list" },
      oldest.map((m) => {
        const feedback = el("p", { class: "feedback", role: "status" });
        const reason = el("input", { name: "reason", maxlength: "200", required: true });
        const ask = el("div", { class: "dispute-confirm" });
        // Decided: off the list, said under the Disputes heading, which takes the focus.
        const decided = (text) => {
          forget(m.match);
          say(text, "info", $("disputes-feedback"));
          $("disputes-heading").focus();
        };
        const decide = (winner, button) => confirmStep(ask, `Give match ${m.match} to ${winner}? Its ladder is rated again.`,
          `Yes, ${winner} wins`, () => act(async () => {
            const data = await lobby.call("adjudicate", { match: m.match, winner });
            decided(`Match ${data.match} decided: ${data.winner} wins.`);
          }, { where: feedback }), { back: button, label: `Decide match ${m.match}` });
        return el("li", { class: "dispute", dataset: { match: String(m.match) } },
          el("p", {}, `Match ${m.match} on ${m.ladder}, ${fmtLength(m.length)}: ${m.a} vs ${m.b}, disputed.`,
            m.claimant ? el("span", { class: "dispute-claim" },
              ` ${m.claimant} reports a win${m.scores ? ` (${m.scores[0]}–${m.scores[1]})` : ""}; ${m.by} disputes it.`) : null,
            " ", el("span", { class: "dispute-age hint", dataset: { age: String(m.age ?? "") } }, `${waited(m)}.`)),
          el("div", { class: "buttons" },
            el("button", { type: "button", class: "small", onclick: (ev) => decide(m.a, ev.currentTarget) }, `${m.a} wins`),
            el("button", { type: "button", class: "small", onclick: (ev) => decide(m.b, ev.currentTarget) }, `${m.b} wins`)),
          el("form", { class: "inline-form", onsubmit: (ev) => {
            ev.preventDefault();
            confirmStep(ask, `Void match ${m.match}? Nobody wins it and it is not rated.`, `Yes, void match ${m.match}`, () => act(async () => {
              const data = await lobby.call("void", { match: m.match, reason: reason.value.trim() });
              decided(`Match ${data.match} voided: ${data.reason}.`);
            }, { where: feedback }), { back: reason, label: `Void match ${m.match}` });
          } }, el("label", {}, "Reason to void ", reason), el("button", { type: "submit", class: "small danger" }, "Void…")),
          ask, feedback);
      })));
  }

  setInterval(() => {
    for (const node of document.querySelectorAll("li.dispute[data-match] .dispute-age")) {
      const m = state.disputes.get(Number(node.closest("li").dataset.match));
      if (m) node.textContent = `${waited(m)}.`;
    }
  }, AGE_TICK_MS);

  // ---- the player's own -----------------------------------------------------------------

  function renderMine() {
    const target = $("my-disputes");
    if (!target) return;
    const list = [...mine.values()].sort((x, y) => x.match - y.match);
    target.replaceChildren(...(list.length ? [el("ul", { class: "plain-list" }, list.map((m) => {
      const by = m.disputedBy ? ` by ${m.disputedBy === state.me ? "you" : m.disputedBy}` : "";
      return el("li", { class: "notice dispute-state", dataset: { match: String(m.match) } },
        `Match ${m.match} (${m.a} vs ${m.b} on ${m.ladder}) is disputed${by}. An admin will decide it, `
        + "by giving the win to one of you or by voiding the match. You are free to play other matches meanwhile.");
    }))] : []));
  }

  // A match of this player was disputed (by either of them): it waits, they play on.
  function disputed(m, by) {
    mine.set(m.match, { ...m, status: "disputed", disputedBy: by });
    if (state.match && state.match.match === m.match) {
      state.match = null;
      renderMatch(); // the play panel is open again: invite, join
    }
    renderMine();
  }

  // A match left the lobby's disputes (decided, voided): off both lists.
  function forget(match) {
    const listed = state.disputes.delete(match);
    if (listed) renderDisputes();
    if (mine.delete(match)) renderMine();
    return listed;
  }

  // After a login: the player's disputes that wait (the login's reply names them).
  function signedIn(waiting) {
    mine.clear();
    for (const m of waiting || []) mine.set(m.match, m);
    renderMine();
  }

  function signedOut() {
    mine.clear();
    state.disputes.clear();
    renderMine();
    renderDisputes();
  }

  // The push: both players, and every admin online (told as a player is of an invitation).
  lobby.on("result_disputed", (data) => {
    if (state.match && state.match.match === data.match) {
      disputed(state.match, data.by);
      say(`${data.by === state.me ? "You" : data.by} disputed match ${data.match}; an admin will decide it. You are free to play other matches meanwhile.`);
    }
    if (state.role === "admin") {
      alerts.disputed(`Match ${data.match} is disputed by ${data.by}: it waits for an admin.`);
      act(findDisputes, { quiet: true });
    }
  });

  return { findDisputes, renderDisputes, disputed, forget, signedIn, signedOut };
}
