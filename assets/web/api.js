// HTTP calls to the room's API with the tab's token as a bearer.

/** A failed answer: `{status, error, details, retryAfterMs}`. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? String(body.error) : `HTTP ${status}`);
    this.status = status;
    this.error = body && body.error ? String(body.error) : `HTTP ${status}`;
    this.details = body && typeof body.details === 'object' ? body.details : undefined;
    this.retryAfterMs = body && Number.isFinite(body.retryAfterMs) ? body.retryAfterMs : undefined;
  }
}

/** `method` on `/api/rooms/{room}{path}`; the JSON answer, or throws an
 * `ApiError` (status 0 when the server could not be reached). */
export async function call(room, token, method, path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(`/api/rooms/${encodeURIComponent(room)}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    throw new ApiError(0, { error: `can't reach the server (${e.message || e})` });
  }
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) throw new ApiError(res.status, json && typeof json === 'object' ? json : { error: text.trim() || res.statusText });
  return json;
}

/** A ticket for one socket of this room (contract C). */
export function ticket(room, token) {
  return call(room, token, 'POST', '/ticket', {});
}
