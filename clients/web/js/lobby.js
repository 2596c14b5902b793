// The socket layer: JSON requests matched to replies by id, pushes by name,
// reconnect with exponential back-off (after a restart the server announced with
// `server_shutdown`, after the wait it named instead). No DOM here.

export class LobbyError extends Error {
  constructor(code, message, cmd, retryAfter = null) {
    super(message);
    this.code = code;
    this.cmd = cmd;
    this.retryAfter = retryAfter; // seconds, when the server says when to ask again
  }
}

// A page refused for now (the reads from this address are over the server's budget) is asked
// again after the wait the server names, a few times at most.
const PAGE_RETRIES = 5;
const MAX_PAGE_WAIT = 10;
// The longest wait `server_shutdown` is taken at, in seconds.
const MAX_RESTART_WAIT = 60;

// The milliseconds `server_shutdown` asks to wait before connecting again (1 s if it does not say).
export function restartWait(data) {
  const after = data && data.reconnect_after;
  if (typeof after !== "number" || !(after >= 0)) return 1000;
  return Math.min(after, MAX_RESTART_WAIT) * 1000;
}

export class Lobby {
  constructor(url, { minDelay = 250, maxDelay = 10000, timeout = 30000 } = {}) {
    this.url = url;
    this.minDelay = minDelay;
    this.maxDelay = maxDelay;
    this.timeout = timeout;
    this.delay = minDelay;
    // Ids are idempotency keys for the server: unique per page load, reused only to retry.
    this.idPrefix = Math.random().toString(36).slice(2, 10);
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject, timer}
    this.handlers = new Map(); // push name -> [fn]
    this.ws = null;
    this.ready = false;
    this.hello = null;
    this.restartIn = null; // ms: the wait the server named when it said it was restarting
  }

  // Register fn(data) for a push; also the local events "open" (after hello) and "close".
  on(name, fn) {
    if (!this.handlers.has(name)) this.handlers.set(name, []);
    this.handlers.get(name).push(fn);
  }

  emit(name, data) {
    for (const fn of this.handlers.get(name) || []) {
      try {
        fn(data);
      } catch (err) {
        console.error(`handler for ${name} failed`, err);
      }
    }
  }

  connect() {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("message", (ev) => this.receive(ev.data));
    ws.addEventListener("close", () => {
      if (this.ws !== ws) return;
      const wasReady = this.ready;
      this.ready = false;
      this.failPending("The connection to the server was lost.");
      // A restart the server announced is no failure: its wait, and the back-off unchanged.
      const restarting = this.restartIn !== null;
      const wait = restarting ? this.restartIn : this.delay;
      this.restartIn = null;
      this.emit("close", { retryIn: wait, wasReady, restarting });
      setTimeout(() => this.connect(), wait);
      if (!restarting) this.delay = Math.min(this.delay * 2, this.maxDelay);
    });
  }

  receive(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof msg.event === "string") {
      if (msg.event === "hello") {
        this.ready = true;
        this.delay = this.minDelay;
        this.hello = msg.data;
        this.emit("open", msg.data);
      }
      if (msg.event === "server_shutdown") this.restartIn = restartWait(msg.data);
      this.emit(msg.event, msg.data);
      return;
    }
    const waiting = this.pending.get(msg.id);
    if (!waiting) return;
    this.pending.delete(msg.id);
    clearTimeout(waiting.timer);
    if (msg.ok) {
      waiting.resolve(msg.data);
    } else {
      const err = msg.error || {};
      waiting.reject(new LobbyError(err.code || "internal", err.message || "The server refused.", msg.cmd,
        typeof err.retry_after === "number" ? err.retry_after : null));
    }
  }

  failPending(message) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(new LobbyError("disconnected", message));
    }
    this.pending.clear();
  }

  // Send {"id","cmd","args"}; resolves with the reply's data, rejects with LobbyError.
  call(cmd, args = {}) {
    // Not ready, or closing: the server has closed it (a newer login, a restart) and the
    // "close" event is still to come; sending now would only be an error in the console.
    if (!this.ready || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new LobbyError("disconnected", "Not connected to the server; retrying."));
    }
    const clean = {};
    for (const [k, v] of Object.entries(args)) {
      if (v !== undefined && v !== null && v !== "") clean[k] = v;
    }
    const id = `${this.idPrefix}-${this.nextId++}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new LobbyError("timeout", `No answer to '${cmd}' from the server.`));
      }, this.timeout);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ id, cmd, args: clean }));
    });
  }

  // A reply too big for one frame comes in pages (ladder, event show, history): `call`, then
  // its `next` sent back until it is null, each page's lists joined to the first's.
  async callAll(cmd, args = {}) {
    const data = await this.page(cmd, args);
    for (let more = data; more.next; ) {
      more = await this.page(cmd, more.next);
      for (const [key, value] of Object.entries(more)) {
        if (Array.isArray(value) && Array.isArray(data[key])) data[key].push(...value);
      }
      data.next = more.next;
    }
    return data;
  }

  async page(cmd, args) {
    for (let tries = 0; ; tries++) {
      try {
        return await this.call(cmd, args);
      } catch (err) {
        if (!(err instanceof LobbyError) || err.code !== "rate_limited" || err.retryAfter === null
            || tries >= PAGE_RETRIES) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.min(err.retryAfter, MAX_PAGE_WAIT) * 1000));
      }
    }
  }
}

export function lobbyUrl(loc = window.location) {
  return `${loc.protocol === "https:" ? "wss:" : "ws:"}//${loc.host}/ws`;
}
