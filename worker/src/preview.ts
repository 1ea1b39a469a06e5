// The routes to a port inside a room's sandbox (docs/protocol.md "Ports"):
// the HTTP preview `ANY /api/rooms/{room}/ports/{port}/{path…}` with its
// browser credential (the `duet_preview` cookie), and the tunnel `GET
// /api/rooms/{room}/tunnel/{port}`. Both go from the Worker straight to
// the room's sandbox (src/sandbox/types.ts `fetchPort`, `tunnel`), never
// through the room's object, and never start a sandbox.

import { guarded, watch } from "./watch";
import { OWNER, check, type Caller } from "./access";
import { limits, type Env } from "./env";
import { ApiError, addDetail, describe, errorResponse, same } from "./http";
import { roomDetails } from "./ops";
import { askCaller } from "./rooms";
import { roomSandbox } from "./sandbox/adapter";
import { NothingListens, SandboxStarting } from "./sandbox/types";
import { credential } from "./credentials";

/** The browser's credential for one preview. */
export const PREVIEW_COOKIE = "duet_preview";

const encoder = new TextEncoder();

/**
 * The cookie's value for the preview of `port` in `room`: an HMAC of both
 * keyed by the token, so that it opens that preview only and tells nothing
 * of the token. Made from an invite's token, it names the invite
 * (`i3.MAC`, the MAC over the invite's id too): it works while the invite
 * does, with the invite's role as of then.
 */
export async function previewCredential(token: string, room: string, port: number, inviteId?: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(token), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const what = `duet-preview\n${room}\n${port}${inviteId === undefined ? "" : `\n${inviteId}`}`;
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(what)));
  const text = btoa(String.fromCharCode(...mac)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return inviteId === undefined ? text : `${inviteId}.${text}`;
}

/** Who a `duet_preview` cookie of `room`'s `port` is; undefined when it is none (or its invite no longer works). */
async function cookieCaller(env: Env, token: string, room: string, port: number, value: string): Promise<Caller | undefined> {
  const dot = value.indexOf(".");
  const inviteId = dot < 0 ? undefined : value.slice(0, dot);
  if (!same(value, await previewCredential(token, room, port, inviteId))) return undefined;
  return inviteId === undefined ? OWNER : askCaller(env, room, { inviteId });
}

/** The port of a path segment, or undefined when it is not 1-65535. */
function portOf(text: string): number | undefined {
  // As Rust's u16 parse reads it (`+` and leading zeros allowed).
  if (!/^\+?[0-9]{1,20}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/** 400s of the room and port, or the port. */
function checked(room: string, portText: string): number {
  const details = roomDetails(room);
  const port = portOf(portText);
  if (port === undefined) addDetail(details, "port", "must be a port number from 1 to 65535");
  if (Object.keys(details).length > 0 || port === undefined) throw ApiError.invalid(details);
  return port;
}

/** A form-encoded query part, decoded (undefined when it does not decode). */
function formDecoded(part: string): string | undefined {
  try {
    return decodeURIComponent(part.replace(/\+/g, " "));
  } catch {
    return undefined;
  }
}

/**
 * The query without its `token` parameters (however their name is
 * encoded: `%74oken` is `token` too), as it was written otherwise, and
 * their values.
 */
function withoutToken(query: string): { rest: string; tokens: string[] } {
  const tokens: string[] = [];
  const kept: string[] = [];
  for (const pair of query.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    if (formDecoded(eq < 0 ? pair : pair.slice(0, eq)) === "token") tokens.push(formDecoded(eq < 0 ? "" : pair.slice(eq + 1)) ?? "");
    else kept.push(pair);
  }
  return { rest: kept.join("&"), tokens };
}

/**
 * The pairs of a Cookie header. Several Cookie headers come joined by
 * ", ", and a cookie's value cannot hold a comma: both separate pairs.
 */
function cookiePairs(header: string): string[] {
  return header.split(/[;,]/);
}

/** The request's cookies but Duet's own, as a Cookie header (null when none are left). */
function appCookies(header: string | null): string | null {
  if (header === null) return null;
  const kept = cookiePairs(header)
    .map((c) => c.trim())
    .filter((c) => c !== "" && c.split("=")[0].trim() !== PREVIEW_COOKIE);
  return kept.length > 0 ? kept.join("; ") : null;
}

function cookieValue(header: string | null, name: string): string[] {
  if (header === null) return [];
  return cookiePairs(header)
    .map((c) => c.trim())
    .filter((c) => c.split("=")[0].trim() === name)
    .map((c) => c.slice(c.indexOf("=") + 1).trim());
}

/** The request's bearer token, if it has one. */
function bearer(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  return header !== null && header.startsWith("Bearer ") ? header.slice(7).trim() : undefined;
}

/**
 * `ANY /api/rooms/{room}/ports/{port}[/{path…}]` (`path` undefined: no
 * slash after the port). `rawRoom` and `portText` are the path's
 * segments, `query` the raw query.
 */
export async function preview(
  request: Request,
  env: Env,
  rawRoom: string,
  room: string,
  portText: string,
  path: string | undefined,
  query: string,
): Promise<Response> {
  const token = env.DUET_TOKEN ?? "";
  const { rest, tokens } = withoutToken(query);
  const prefix = `/api/rooms/${rawRoom}/ports/${portText}`;
  let caller: Caller | undefined = OWNER;
  if (token !== "") {
    const header = bearer(request);
    if (tokens.length > 0) caller = await credential(env, token, room, tokens);
    else if (header !== undefined && (caller = await credential(env, token, room, [header]))) {
      // The bearer token says who.
    } else {
      const port = portOf(portText);
      caller = undefined;
      for (const value of cookieValue(request.headers.get("cookie"), PREVIEW_COOKIE)) {
        if (port !== undefined && (caller = await cookieCaller(env, token, room, port, value))) break;
      }
    }
    if (!caller) return errorResponse(ApiError.unauthorized());
  }
  const port = checked(room, portText);
  const search = rest === "" ? "" : `?${rest}`;
  // A page trades the token for the cookie; a WebSocket or a form cannot
  // follow a redirect, so it goes on with the token taken off.
  const upgrade = request.headers.get("upgrade")?.toLowerCase() === "websocket";
  const page = (request.method === "GET" || request.method === "HEAD") && !upgrade;
  check(caller.role, page ? "previewRead" : "usePort");
  if (path === undefined) {
    return new Response(null, { status: 308, headers: { location: `${prefix}/${query === "" ? "" : `?${query}`}` } });
  }
  if (tokens.length > 0 && page) {
    // Once: the browser keeps a credential for this preview only, never the token.
    const headers: Record<string, string> = { location: `${prefix}${path}${search}` };
    if (token !== "") {
      const value = await previewCredential(token, room, port, caller.inviteId);
      const secure = new URL(request.url).protocol === "https:" ? "; Secure" : "";
      headers["set-cookie"] = `${PREVIEW_COOKIE}=${value}; Path=${prefix}/; HttpOnly; SameSite=Strict${secure}`;
    }
    return new Response(null, { status: 303, headers });
  }
  // What the app sees: its own host, where the browser was, the prefix; no credential.
  const headers = new Headers(request.headers);
  headers.delete("authorization");
  const cookies = appCookies(headers.get("cookie"));
  if (cookies === null) headers.delete("cookie");
  else headers.set("cookie", cookies);
  headers.set("host", `localhost:${port}`);
  headers.set("x-forwarded-host", request.headers.get("host") ?? new URL(request.url).host);
  headers.set("x-forwarded-prefix", prefix);
  headers.set("x-forwarded-proto", new URL(request.url).protocol.replace(/:$/, ""));
  const forwarded = new Request(`http://localhost:${port}${path}${search}`, {
    method: request.method,
    headers,
    body: request.method === "GET" || request.method === "HEAD" ? undefined : request.body,
    redirect: "manual",
  });
  // Revoked, expired or demoted below what it does: the exchange is cut.
  const w = watch(env, room, caller, page ? "previewRead" : "usePort");
  try {
    return guarded(await roomSandbox(env, room).fetchPort(port, forwarded), w);
  } catch (e) {
    w.stop();
    return portError(e, port);
  }
}

/** `GET /api/rooms/{room}/tunnel/{port}` (upgrade; the token checked as for the room's socket). */
export async function tunnel(request: Request, env: Env, room: string, portText: string, caller: Caller): Promise<Response> {
  const port = checked(room, portText);
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw ApiError.field("upgrade", "`Upgrade` header did not include 'websocket'");
  }
  check(caller.role, "usePort");
  const w = watch(env, room, caller, "usePort");
  try {
    return guarded(await roomSandbox(env, room).tunnel(port, request, limits(env).tunnelBytesPerSec), w);
  } catch (e) {
    w.stop();
    return portError(e, port);
  }
}

function portError(e: unknown, port: number): Response {
  if (e instanceof NothingListens) return nothingListens(port);
  if (e instanceof SandboxStarting) return nothingListens(port);
  return errorResponse(ApiError.internal(`the sandbox's port ${port} could not be reached: ${describe(e)}`));
}

function nothingListens(port: number): Response {
  return new Response(JSON.stringify({ error: new NothingListens(port).message }), {
    status: 502,
    headers: { "content-type": "application/json" },
  });
}
