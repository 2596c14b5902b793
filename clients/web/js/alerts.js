// Signs of a new invitation (or, to an admin, a new dispute) that reach someone looking elsewhere: a mark in the
// page title, a short tone made with WebAudio (no sound file), and a browser notification
// when the player has allowed them (the permission is asked only on their click).

const SOUND_KEY = "matchlobby.sound";

export class Alerts {
  constructor(baseTitle = document.title) {
    this.baseTitle = baseTitle;
    this.audio = null;
    this.played = 0; // tones played, for the page's own checks
    this.notified = 0;
    this.waiting = { invitations: 0, disputes: 0 };
  }

  get soundOn() {
    try {
      return localStorage.getItem(SOUND_KEY) !== "off";
    } catch {
      return true;
    }
  }

  set soundOn(on) {
    try {
      localStorage.setItem(SOUND_KEY, on ? "on" : "off");
    } catch {
      // not kept across reloads
    }
  }

  // The title counts what waits for an answer: "(2) Invitation — matchlobby", and for an
  // admin the disputes to decide: "(1) Dispute — matchlobby".
  setWaiting(count) {
    this.waiting.invitations = count;
    this.showWaiting();
  }

  setDisputes(count) {
    this.waiting.disputes = count;
    this.showWaiting();
  }

  showWaiting() {
    const { invitations, disputes } = this.waiting;
    const parts = [invitations > 0 ? `(${invitations}) Invitation` : null,
      disputes > 0 ? `(${disputes}) Dispute` : null].filter(Boolean);
    document.title = parts.length ? `${parts.join(" ")} — ${this.baseTitle}` : this.baseTitle;
  }

  notificationsSupported() {
    return typeof window.Notification === "function";
  }

  notificationsAllowed() {
    return this.notificationsSupported() && window.Notification.permission === "granted";
  }

  // Only from a click: browsers (rightly) ignore or penalise a request nobody asked for.
  async askNotifications() {
    if (!this.notificationsSupported()) return "unsupported";
    return window.Notification.requestPermission();
  }

  tone() {
    if (!this.soundOn) return;
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return;
    this.audio = this.audio || new Ctx();
    const ctx = this.audio;
    // Made before the player touched the page (a resumed session), it starts suspended;
    // browsers let it play once the page has been clicked.
    if (ctx.state === "suspended") ctx.resume().catch(() => {});
    const t = ctx.currentTime;
    const gain = ctx.createGain();
    gain.gain.setValueAtTime(0.0001, t);
    gain.gain.exponentialRampToValueAtTime(0.2, t + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t + 0.45);
    gain.connect(ctx.destination);
    for (const [freq, at] of [[660, 0], [880, 0.15]]) {
      const osc = ctx.createOscillator();
      osc.type = "sine";
      osc.frequency.setValueAtTime(freq, t + at);
      osc.connect(gain);
      osc.start(t + at);
      osc.stop(t + at + 0.3);
    }
    this.played += 1;
  }

  // A new invitation: the tone, and a notification when the player allowed them.
  invited(text) {
    this.alert(text, "matchlobby-invitation");
  }

  // A new dispute, to an admin: the same signs as an invitation's.
  disputed(text) {
    this.alert(text, "matchlobby-dispute");
  }

  alert(text, tag) {
    this.tone();
    if (this.notificationsAllowed()) {
      new window.Notification("matchlobby", { body: text, tag });
      this.notified += 1;
    }
  }
}
