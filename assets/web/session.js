// The tab's session: the link's token moved out of the address bar into
// sessionStorage, this tab's connection id, the person's name.

export const ROOM_ID = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$/;
const tokenKey = (room) => `duet.token.${room}`;

function store(kind) {
  try {
    return kind === 'local' ? window.localStorage : window.sessionStorage;
  } catch {
    return null;
  }
}

/** The room of a `/r/{room}` path, or null. */
export function roomOfPath(pathname) {
  const m = pathname.match(/^\/r\/([^/]+)\/?$/);
  if (!m) return null;
  let room;
  try {
    room = decodeURIComponent(m[1]);
  } catch {
    return null;
  }
  return ROOM_ID.test(room) ? room : null;
}

/** Reads `#token=…` once, at once drops it from the address bar (and
 * history), and keeps it for this tab only. Returns the tab's token. */
export function takeToken(room) {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const token = fragment.get('token');
  if (location.hash || location.search) history.replaceState(null, '', `/r/${encodeURIComponent(room)}`);
  if (token) keepToken(room, token);
  return store('session')?.getItem(tokenKey(room)) || null;
}

export function keepToken(room, token) {
  store('session')?.setItem(tokenKey(room), token);
}

export function forgetToken(room) {
  store('session')?.removeItem(tokenKey(room));
}

/** This tab's connection id (`_pk`), kept across reloads of the tab. */
export function connectionId() {
  const s = store('session');
  let pk = s?.getItem('duet.pk');
  if (!pk) {
    const bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes);
    pk = 'web-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    s?.setItem('duet.pk', pk);
  }
  return pk;
}

/** The name this browser goes by (null: never chosen). */
export function savedName() {
  return store('local')?.getItem('duet.name') || null;
}

export function saveName(name) {
  store('local')?.setItem('duet.name', name);
}

/** What the home form was given: a room, or a link
 * (`…/r/ROOM#token=T`, or a `duet join` link `http://T@HOST:PORT/ROOM`).
 * Returns `{room, token?, origin?}` or null. */
export function readJoin(input) {
  const text = input.trim();
  if (ROOM_ID.test(text)) return { room: text };
  let url;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const fromPage = roomOfPath(url.pathname);
  const token = new URLSearchParams(url.hash.replace(/^#/, '')).get('token');
  if (fromPage) return { room: fromPage, token: token || undefined, origin: url.origin };
  const bare = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ''));
  if (ROOM_ID.test(bare)) {
    const user = decodeURIComponent(url.username || '');
    return { room: bare, token: user || token || undefined, origin: url.origin };
  }
  return null;
}
