// The routes to a port inside a room's sandbox (docs/protocol.md "Ports"):
// the HTTP preview `ANY /api/rooms/{room}/ports/{port}/{path…}` for
// clients that send the token, and the tunnel `GET
// /api/rooms/{room}/tunnel/{port}`. Both go from the Worker straight to
// the room's sandbox (src/sandbox/types.ts `fetchPort`, `tunnel`), never
// through the room's object, and never start a sandbox. A browser is never
// served an app on the Worker's own origin: a page goes to the port's
// own origin (its `url`, under DUET_PREVIEW_HOST), anything else is 403.

import { guarded, watch } from "./watch";
import { OWNER, check, type Caller } from "./access";
import { limits, type Env } from "./env";
import { ApiError, addDetail, describe, errorResponse } from "./http";
import { roomDetails } from "./ops";
import { roomSandbox } from "./sandbox/adapter";
import { NothingListens, SandboxStarting } from "./sandbox/types";
import { credential } from "./credentials";

/** The browser's credential for one preview. */
export const PREVIEW_COOKIE = "duet_preview";

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
    const given = tokens.length > 0 ? tokens : header !== undefined ? [header] : [];
    caller = given.length > 0 ? await credential(env, token, room, given) : undefined;
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
  if (fromBrowser(request, token !== "")) return elsewhere(env, room, port, `${path}${search}`, page);
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
  // A GET or HEAD (all a viewer may send) carries no body: none is sent on.
  const forwarded = new Request(`http://localhost:${port}${path}${search}`, {
    method: request.method,
    headers,
    body: request.method === "GET" || request.method === "HEAD" ? undefined : request.body,
    redirect: "manual",
  });
  // Revoked, expired or demoted below what it does: the exchange is cut.
  const w = watch(env, room, caller, page ? "previewRead" : "usePort");
  try {
    return guarded(confineCookies(await roomSandbox(env, room).fetchPort(port, forwarded)), w);
  } catch (e) {
    w.stop();
    return portError(e, port);
  }
}

/**
 * Whether a browser sent the request: it says where it comes from
 * (`Origin`, `Sec-Fetch-*`), or it has no bearer token where one is
 * needed (the token in the URL), or it carries cookies without one.
 */
function fromBrowser(request: Request, tokenNeeded: boolean): boolean {
  let says = request.headers.has("origin");
  for (const [name] of request.headers) if (name.startsWith("sec-fetch-")) says = true;
  const hasBearer = bearer(request) !== undefined;
  return says || (!hasBearer && (tokenNeeded || request.headers.has("cookie")));
}

/** A browser on the Worker's preview route: a page goes to the port's own origin (`target` there); anything else is 403. */
async function elsewhere(env: Env, room: string, port: number, target: string, page: boolean): Promise<Response> {
  if (!env.DUET_PREVIEW_HOST) {
    return errorResponse(
      new ApiError(403, "forbidden", {
        origin: ["browsers open a port's preview at an origin of its own, and this Worker has none: set the var DUET_PREVIEW_HOST"],
      }),
    );
  }
  let url: string | undefined;
  try {
    url = (await roomSandbox(env, room).listeningPorts()).find((p) => p.port === port)?.url;
  } catch (e) {
    return portError(e, port);
  }
  if (!page || url === undefined) {
    const where = url === undefined ? "" : `: ${url}`;
    return errorResponse(new ApiError(403, "forbidden", { origin: [`a port's preview opens at an origin of its own${where}`] }));
  }
  return new Response(null, { status: 303, headers: { location: `${url.replace(/\/+$/, "")}${target}` } });
}

/**
 * The app's `Set-Cookie` headers kept to the preview's own host: a
 * `Domain` attribute is taken off (a host-only cookie is left), and a
 * cookie named as Duet's credential is dropped.
 */
export function confineCookies(response: Response): Response {
  const given = response.headers.getSetCookie();
  if (given.length === 0 || response.status === 101) return response;
  const out = new Response(response.body, response);
  out.headers.delete("set-cookie");
  for (const cookie of given) {
    const [pair, ...attributes] = cookie.split(";").map((part) => part.trim());
    const name = pair.split("=")[0].trim();
    if (name === "" || name.toLowerCase() === PREVIEW_COOKIE) continue;
    const kept = attributes.filter((a) => a !== "" && a.split("=")[0].trim().toLowerCase() !== "domain");
    out.headers.append("set-cookie", [pair, ...kept].join("; "));
  }
  return out;
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
