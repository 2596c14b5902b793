// The director's desk as a view of its own (#desk, for admins): the lobby and the desk are
// two views of one page, switched by the address, with links to each above them. Also the
// desk's small shared parts: a "Yes / Cancel" step before an action that cannot be undone,
// and removing a player entered by mistake.

import { $, el } from "./dom.js";

const DESK = "#desk";

// Ask before doing: `box` shows `text` with a Yes button (`yes`, its label) and Cancel.
// Yes gets the focus; Cancel empties the box and gives the focus back to `back`.
export function confirmStep(box, text, yes, onYes, { back = null, label = null } = {}) {
  const button = el("button", { type: "button", class: "danger", onclick: () => {
    box.replaceChildren();
    // the Yes button is gone: the focus must not fall to the page's body
    Promise.resolve(onYes()).finally(() => {
      if (document.activeElement === document.body && back && back.isConnected) back.focus();
    });
  } }, yes);
  box.replaceChildren(el("div", { class: "confirm", role: "group", "aria-label": label || yes },
    el("p", { class: "notice" }, text),
    el("div", { class: "buttons" }, button,
      el("button", { type: "button", class: "secondary", onclick: () => {
        box.replaceChildren();
        if (back && back.isConnected) back.focus();
      } }, "Cancel"))));
  button.focus();
}

export function setUpDesk({ lobby, act, say }) {
  let allowed = false;

  // Which view the address asks for; the desk only for an admin.
  function showView({ focus = false } = {}) {
    const desk = allowed && window.location.hash === DESK;
    $("views").hidden = !allowed;
    $("admin").hidden = !desk;
    $("lobby-view").hidden = desk;
    $("view-desk").toggleAttribute("aria-current", false);
    $("view-lobby").toggleAttribute("aria-current", false);
    if (allowed) (desk ? $("view-desk") : $("view-lobby")).setAttribute("aria-current", "page");
    if (desk && focus) $("admin-heading").focus();
  }

  window.addEventListener("hashchange", () => showView({ focus: true }));
  // A player's name in the desk opens the profile, in the lobby's view (the page changes the
  // address without a hashchange).
  document.addEventListener("click", (ev) => {
    if (ev.target.closest("a[data-player-link]")) queueMicrotask(() => showView());
  });

  // ---- removing a player entered by mistake --------------------------------------------------

  const form = $("player-remove-form");
  const feedback = form.querySelector(".feedback");
  const name = form.elements.name;
  form.addEventListener("input", () => say("", "info", feedback));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const who = name.value.trim();
    say("", "info", feedback);
    confirmStep(form.querySelector(".remove-confirm"),
      `Remove ${who} from the lobby for good? Only a player without results can be removed.`,
      `Yes, remove ${who}`, () => act(async () => {
        const data = await lobby.call("player remove", { name: who });
        form.reset();
        say(`Removed ${data.player}.`, "info", feedback);
        name.focus();
      }, { where: feedback }), { back: name, label: `Remove ${who}` });
  });

  return {
    // After a login or a logout: whether the desk may be shown.
    setAllowed(yes) {
      allowed = yes;
      showView();
    },
  };
}
