// The session token that lets a reload log in again (`resume`). Only the token and its
// expiry are kept in localStorage, never the password.

const KEY = "matchlobby.session";

export function savedSession() {
  try {
    const s = JSON.parse(localStorage.getItem(KEY) || "null");
    if (!s || typeof s.token !== "string") return null;
    if (s.expires_at && Date.parse(s.expires_at) <= Date.now()) {
      localStorage.removeItem(KEY);
      return null;
    }
    return s;
  } catch {
    return null;
  }
}

export function saveSession(player, session) {
  if (!session || !session.token) return;
  try {
    localStorage.setItem(KEY, JSON.stringify({ player, token: session.token, expires_at: session.expires_at }));
  } catch {
    // storage refused (private mode, quota): a reload asks for the password again
  }
}

// Forget the token; with `only`, just when it is still that one (another tab may have saved
// its own since).
export function forgetSession(only = null) {
  const s = savedSession();
  if (s && only !== null && s.token !== only) return;
  try {
    localStorage.removeItem(KEY);
  } catch {
    // nothing kept
  }
}
