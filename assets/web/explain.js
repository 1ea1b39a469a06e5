// What a person reads when the server says no or cannot be reached: one
// sentence, in the terminal client's words (src/client/explain.rs), the
// server's own words kept in brackets.

const article = (role) => (/^[aeiou]/.test(role) ? `an ${role}` : `a ${role}`);

/** `403 forbidden; role: a viewer may not run commands`. */
function said(err) {
  const details = Object.entries(err.details || {})
    .map(([field, why]) => `${field}: ${[why].flat().join(', ')}`)
    .join('; ');
  const status = err.status ? `${err.status} ` : '';
  return `${status}${err.error || 'failed'}${details ? `; ${details}` : ''}`;
}

/** The first reason the server gave for `field`. */
function detail(err, field) {
  const why = err.details && err.details[field];
  const first = Array.isArray(why) ? why[0] : why;
  return typeof first === 'string' && first ? first : null;
}

const capital = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/** "You are a viewer: a viewer may not run commands". */
export function notAllowed(sentence) {
  const m = sentence.match(/^an? (owner|writer|viewer)\b/);
  return m ? `You are ${article(m[1])}: ${sentence}` : `Your role does not allow that: ${sentence}`;
}

/** An error answer (`{status, error, details}`) as a sentence. */
export function refusal(err) {
  const s = said(err);
  const role = detail(err, 'role');
  switch (err.status) {
    case 401:
      return `The server refused the token (${s}): the link may be wrong or no longer valid`;
    case 403:
      if (role) return `${notAllowed(role)} (403 ${err.error})`;
      if (detail(err, 'name')) return `${capital(detail(err, 'name'))} (403 ${err.error})`;
      return `The server refused this page (${s})`;
    case 404:
      return err.details ? `Not in this room (${s})` : `Nothing there (${s})`;
    case 409:
      return `The room cannot do that now (${s})`;
    case 413:
      return `Too large for the server (${s})`;
    case 429:
      return `The room is busy (${err.error}); try again in a moment`;
    case 503:
      return `The server is busy (${err.error}); try again in a moment`;
    case 507:
      return `The room's disk is full (${s})`;
    default:
      if (!err.status) return err.error || 'It failed';
      if (err.status >= 400 && err.status < 500) return `The server refused the request (${s})`;
      return `The server failed (${s})`;
  }
}

/** The socket was closed with 4401/4403: the invite ended or its role
 * no longer allows it. */
export function inviteEnded(code, reason) {
  if (code === 4403) return `The room closed this page's connection (${reason || 'forbidden'}): ask the room's owner for a new link`;
  let how = 'no longer works';
  if (/revoked/.test(reason || '')) how = 'was revoked';
  else if (/expired/.test(reason || '')) how = 'expired';
  else if (reason) how = `no longer works (${reason})`;
  return `Your invite to this room ${how}: ask the room's owner for a new link`;
}

/** The server refused the link's token (401/403 for a ticket). */
export function inviteRefused(err) {
  return `The server refused your link (${said(err)}): it was revoked, has expired or is for another room; ask the room's owner for a new link`;
}
