// Automatch on the page: a "Find a match" button per live ladder. While the server looks for
// an opponent near the player's rating, the panel says so and offers Cancel; the match starts
// as an invitation's does (the page's match_started handler shows it). Every text reaches the
// DOM through el() (text nodes).

import { $, el } from "./dom.js";

const LENGTH_PATTERN = "[0-9]{1,4}|unlimited";

function lengthText(length) {
  return length === "unlimited" ? "unlimited (unrated)" : `${length} point${length === 1 ? "" : "s"}`;
}

// `state` is the page's (who is logged in, the match being played); `act` runs a command and
// shows a refusal in the given feedback line.
export function setUpSeek({ lobby, act, say, state }) {
  const seek = { ladders: [], looking: null, feedback: el("p", { class: "feedback", role: "status" }) };
  const length = el("input", {
    id: "seek-length", name: "length", value: "1", required: true, maxlength: "9",
    pattern: LENGTH_PATTERN, inputmode: "text",
  });

  function wanted() {
    const raw = length.value.trim().toLowerCase();
    return raw === "unlimited" ? "unlimited" : Number(raw);
  }

  async function find(ladder) {
    if (!length.checkValidity()) {
      say("Length: a number of points, or “unlimited”.", "error", seek.feedback);
      return;
    }
    await act(async () => {
      const data = await lobby.call("seek", { ladder, length: wanted() });
      seek.looking = data;
      render();
      $("seek-cancel")?.focus();
    }, { where: seek.feedback });
  }

  async function cancel() {
    await act(async () => {
      try {
        await lobby.call("unseek");
      } finally {
        seek.looking = null; // not in the pool either way (a refusal says they were not)
        render();
      }
      say("You stopped looking for a match.", "info", seek.feedback);
    }, { where: seek.feedback });
  }

  function render() {
    const panel = $("seek-panel");
    if (!state.me) seek.looking = null; // logged out: the server dropped the seek
    if (!state.me || state.match || !seek.ladders.length) {
      panel.replaceChildren();
      return;
    }
    const parts = [el("h3", { id: "seek-heading" }, "Find a match")];
    const l = seek.looking;
    if (l) {
      parts.push(
        el("p", { class: "seeking", role: "status" },
          `Looking for a match… ${l.ladder}, ${lengthText(l.length)}, within ${l.range} points of your rating (wider the longer you wait).`),
        el("div", { class: "buttons" },
          el("button", { type: "button", id: "seek-cancel", class: "secondary", onclick: cancel }, "Cancel")));
    } else {
      parts.push(
        el("p", { class: "hint" }, "Play someone near your rating: the match starts as soon as an opponent is found."),
        el("label", {}, "Length (points, or “unlimited” = unrated) ", length),
        el("div", { class: "buttons" }, seek.ladders.map((name) => el("button", {
          type: "button", dataset: { seekLadder: name }, onclick: () => find(name),
        }, `Find a match on ${name}`))));
    }
    parts.push(seek.feedback);
    panel.replaceChildren(el("div", { class: "stack-form", role: "group", "aria-labelledby": "seek-heading" }, parts));
  }

  function forget() {
    seek.looking = null; // the server drops a seek with its connection or its match
    render();
  }

  lobby.on("match_started", forget);
  lobby.on("close", forget);

  return {
    render,
    // The live ladders (from the `ladders` reply): one button each.
    setLadders(ladders) {
      seek.ladders = ladders.filter((l) => l.live).map((l) => l.ladder);
      render();
    },
  };
}
