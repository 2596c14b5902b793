// Playing without dead ends: an opponent who dropped (a countdown to the drop timeout, then
// Claim), a resign that asks first, what ended one's matches while one was away, the sign of
// an invitation at the top, and focus that lands somewhere when the button pressed goes.

import { $, el } from "./dom.js";

// "9 min 58 s", "42 s".
function fmtWait(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return `${s} s`;
  return s % 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s / 60} min`;
}

// Focus a heading (or any node) the page just drew, so that the keyboard carries on from it.
function focusOn(node) {
  if (!node) return;
  if (!node.hasAttribute("tabindex") && !/^(BUTTON|A|INPUT|SELECT)$/.test(node.tagName)) node.setAttribute("tabindex", "-1");
  node.focus();
}

export function setUpPlay({ lobby, state, act, say, renderMatch, showFinished, fmtLength, ratingColumn, fmtValue, fmtChange }) {
  const opponentOf = (m) => (m.a === state.me ? m.b : m.a);

  // ---- a dropped opponent -------------------------------------------------------------------

  // state.away: {match, player, deadline (ms, this page's clock) or null when not told}
  function opponentLeft(m, claimIn) {
    const player = opponentOf(m);
    const deadline = typeof claimIn === "number" ? Date.now() + claimIn * 1000 : null;
    state.away = { match: m.match, player, deadline };
    renderMatch();
    say(deadline !== null && claimIn > 0
      ? `${player} left; you can claim the match in ${fmtWait(claimIn)} if they do not come back.`
      : `${player} left; you can claim the match now.`);
  }

  function opponentBack() {
    const { player } = state.away;
    state.away = null;
    renderMatch();
    say(`${player} is back; the match goes on.`);
  }

  const awayFrom = (m) => (state.away && m && state.away.match === m.match ? state.away : null);

  lobby.on("presence", (data) => {
    const m = state.match;
    if (!m || !state.me) return;
    for (const entry of data.players || []) {
      if (entry.player !== opponentOf(m)) continue;
      if (entry.status === "offline") opponentLeft(m, entry.claim_in);
      else if (awayFrom(m)) opponentBack();
    }
  });

  // What the match panel says while the opponent is away: the countdown, then Claim.
  function dropNotice(m) {
    const away = awayFrom(m);
    if (!away || m.status === "disputed") return null;
    const box = el("div", { class: "drop notice-box", dataset: { player: away.player } });
    drawDrop(box, m, away);
    return box;
  }

  function drawDrop(box, m, away) {
    const left = away.deadline === null ? 0 : (away.deadline - Date.now()) / 1000;
    box.dataset.claimable = String(left <= 0);
    if (left > 0) {
      box.replaceChildren(el("p", { class: "notice" }, `${away.player} left; you can claim the match in `,
        el("span", { class: "countdown" }, fmtWait(left)), "."),
      el("p", { class: "hint" }, `If ${away.player} comes back before then, the match goes on.`));
      return;
    }
    box.replaceChildren(
      el("p", { class: "notice" }, `${away.player} left and has not come back: you can claim the match.`),
      el("button", { type: "button", onclick: () => act(async () => {
        showFinished(await lobby.call("claim", { match: m.match }));
        focusResult();
      }) }, "Claim the match"));
  }

  setInterval(() => {
    const box = document.querySelector("#match-panel .drop");
    const away = awayFrom(state.match);
    if (!box || !away || box.dataset.claimable === "true") return;
    drawDrop(box, state.match, away);
    if (box.dataset.claimable === "true") say(`${away.player} has not come back: you can claim match ${away.match} now.`);
  }, 1000);

  // ---- resigning asks first -------------------------------------------------------------------

  function resignBox(m) {
    const box = el("div", { class: "resign-box" });
    const ask = () => {
      const mine = m.stake && m.stake.players ? m.stake.players.find((p) => p.player === state.me) : null;
      const column = ratingColumn(m.ladder);
      const cost = mine && typeof mine.loss === "number" ? ` Your rating changes by ${fmtChange(column, mine.loss)}.` : "";
      const keep = el("button", { type: "button", class: "secondary", onclick: () => {
        offer();
        focusOn(box.querySelector("button"));
      } }, "Keep playing");
      box.replaceChildren(el("div", { class: "confirm", role: "group", "aria-label": "Resign?" },
        el("p", { class: "notice" }, `Resign match ${m.match}? ${opponentOf(m)} wins, and it counts now.${cost}`),
        el("div", { class: "buttons" },
          el("button", { type: "button", class: "danger", onclick: () => act(async () => {
            showFinished(await lobby.call("resign"));
            focusResult();
          }) }, "Yes, resign"),
          keep)));
      keep.focus();
    };
    const offer = () => box.replaceChildren(el("button", { type: "button", class: "danger", onclick: ask }, "Resign…"));
    offer();
    return box;
  }

  // ---- focus after an action that removes its own button --------------------------------------

  function focusMatch() {
    focusOn(document.querySelector("#match-panel h3") || $("play-heading"));
  }

  function focusResult() {
    focusOn(document.querySelector("#last-result h3") || $("play-heading"));
  }

  // The invitee joined: the invite form (where the inviter's focus was) is hidden now.
  lobby.on("match_started", () => {
    const at = document.activeElement;
    if (!at || at === document.body || at.closest("#invite-form")) focusMatch();
  });

  // After Decline: the next invitation's Join, else the play panel.
  function focusAfterInvitation() {
    focusOn(document.querySelector("#invitations li.invitation button") || $("play-heading"));
  }

  // ---- coming back -----------------------------------------------------------------------------

  const ENDED = {
    claim: (e, other) => (e.winner === state.me ? `You claimed match ${e.match}`
      : `${other} claimed match ${e.match} after you left: ${other} won`),
    adjudicate: (e) => `A tournament director decided match ${e.match}: ${e.winner === state.me ? "you" : e.winner} won`,
    void: (e) => `A tournament director voided match ${e.match}${e.reason ? ` (${e.reason})` : ""}: it no longer counts`,
    resign: (e, other) => (e.winner === state.me ? `${other} resigned match ${e.match}: you won` : `You lost match ${e.match} by resigning`),
    confirm: (e, other) => (e.winner === state.me ? `${other} confirmed your win in match ${e.match}` : `You confirmed ${other}'s win in match ${e.match}`),
    abort: (e) => `Match ${e.match} was aborted, unrated`,
  };

  function endedSentence(e) {
    const other = [e.a, e.b].find((side) => side !== state.me) || e.a;
    const said = (ENDED[e.how] || ((x) => `Match ${x.match} ended${x.winner ? `: ${x.winner} won` : ""}`))(e, other);
    const where = ` (${e.ladder}, ${fmtLength(e.length)}).`;
    if (!e.rating) return said + where;
    const column = ratingColumn(e.ladder);
    return `${said + where} Your rating: ${fmtValue(column, e.rating.before)} → ${fmtValue(column, e.rating.after)} (${fmtChange(column, e.rating.change)}).`;
  }

  // The login's `while_away`: shown in the play panel until dismissed, and said once.
  function tellWhileAway(news) {
    const box = $("while-away");
    if (!news || !news.matches || !news.matches.length) return;
    const ok = el("button", { type: "button", class: "small secondary", onclick: () => {
      box.replaceChildren();
      focusOn($("play-heading"));
    } }, "Got it");
    box.replaceChildren(el("div", { class: "result" },
      el("h3", {}, "While you were away"),
      el("ul", { class: "plain-list" }, news.matches.map((e) => el("li", { dataset: { match: String(e.match) } }, endedSentence(e)))),
      news.more ? el("p", { class: "hint" }, `And ${news.more} more before those: your profile's history lists them.`) : null,
      ok));
    const n = news.matches.length + (news.more || 0);
    say(n === 1 ? `While you were away: ${endedSentence(news.matches[0])}` : `While you were away, ${n} of your matches ended; the play panel says how.`);
  }

  // After a login or a resume: the live match (its opponent perhaps away) and what happened.
  function resumed(data) {
    state.away = null;
    const m = data.match;
    if (m && typeof m.claim_in === "number") opponentLeft(m, m.claim_in);
    tellWhileAway(data.while_away);
  }

  // ---- the sign of an invitation at the top ----------------------------------------------------

  function renderSign() {
    const sign = $("invitation-sign");
    const from = [...state.invitations.keys()];
    sign.hidden = from.length === 0;
    sign.textContent = from.length === 1 ? `${from[0]} invites you: answer` : `${from.length} invitations: answer`;
  }

  $("invitation-sign").addEventListener("click", (ev) => {
    ev.preventDefault();
    const join = document.querySelector("#invitations li.invitation button");
    if (!join) return;
    join.scrollIntoView({ block: "center" });
    join.focus();
  });

  return { dropNotice, resignBox, focusMatch, focusResult, focusAfterInvitation, resumed, renderSign };
}
