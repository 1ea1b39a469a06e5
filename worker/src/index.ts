// The Worker: the routes of docs/protocol.md, the bearer token in front of
// them, the checks that answer 400 before anything is touched, and the
// 404/405/413 answers. Room operations, routed by the table of ops.ts, go
// to the room's Durable Object (agent.ts) as requests it serves; sockets
// are forwarded to it; files and archives go to the room's sandbox
// (files.ts, archive.ts).

import { getArchive, getDiff, putArchive } from "./archive";
import { callerOf, listerOf } from "./credentials";
import type { Env } from "./env";
import { deleteFile, getFile, listFolder, putFile } from "./files";
import { ApiError, addDetail, describe, errorResponse, jsonBody, notFound, ok, response, type Details } from "./http";
import { lobbyStub } from "./lobby";
import { isMethod, parseOp, pathOp, roomDetails, routesOf, type Method, type Op } from "./ops";
import { originRefusal } from "./origin";
import { PAGE_DEFAULT, PAGE_MAX } from "./protocol";
import { isControl, nameProblem } from "./text";
import { confineCookies, preview, tunnel } from "./preview";
import type { Who } from "./roomstate";
import { EXECS_PAGE_PATH, PAGE_PATH, roomOp, roomRequest, roomStub } from "./rooms";
import { previewByHost } from "./sandbox/container";
import { pageFile, servePage } from "./web";

export { DuetAgent } from "./agent";
export { DuetLobby } from "./lobby";
export { Sandbox } from "./sandbox/container";

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    try {
      return await route(request, env, ctx);
    } catch (e) {
      return errorResponse(e instanceof ApiError ? e : ApiError.internal(describe(e)));
    }
  },
} satisfies ExportedHandler<Env>;

/** The path (not normalized, still percent-encoded) and query of a request. */
function target(url: string): [string, string] {
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, "").replace(/#.*$/s, "");
  const q = rest.indexOf("?");
  const path = (q < 0 ? rest : rest.slice(0, q)) || "/";
  return [path, q < 0 ? "" : rest.slice(q + 1)];
}

/** A percent-decoded path segment; undefined when it does not decode. */
function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** A port's HTTP preview (`/api/rooms/{room}/ports/{port}[/…]`): its segments and the path after the port. */
function previewTarget(path: string): { rawRoom: string; port: string; rest?: string } | undefined {
  const m = /^\/api\/rooms\/([^/]+)\/ports\/([^/]+)(\/.*)?$/s.exec(path);
  return m ? { rawRoom: m[1], port: m[2], rest: m[3] } : undefined;
}

async function route(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  // Host-based previews (exposePort URLs) are the SDK's, behind their own token.
  const byHost = await previewByHost(request, env);
  if (byHost) return confineCookies(byHost);
  const [path, query] = target(request.url);
  const port = previewTarget(path);
  // A browser of another origin is refused before anything else is looked
  // at (the Worker's own serves Duet's page; a port's preview has an origin of its own).
  const refused = originRefusal(request, env);
  if (refused) return errorResponse(refused);
  const method = request.method === "HEAD" ? "GET" : request.method;
  if (path === "/health") return method === "GET" ? text("ok") : errorResponse(ApiError.methodNotAllowed());
  // The browser page needs no token (it holds no secret).
  const file = pageFile(path);
  if (file !== undefined) return servePage(request, file);
  // The preview checks its own credentials (the token).
  if (port) return preview(request, env, port.rawRoom, decoded(port.rawRoom) ?? port.rawRoom, port.port, port.rest, query);
  if (path === "/api/rooms") return roomList(request, env, method);
  const seg = path.split("/").slice(1);
  const sdkSocket = seg[0] === "agents" && seg[1] === "duet-agent" && seg.length === 3 && seg[2] !== "";
  const roomPath = seg[0] === "api" && seg[1] === "rooms" && seg.length >= 4 && seg[2] !== "";
  const rawRoom = sdkSocket || roomPath ? seg[2] : undefined;
  const room = rawRoom === undefined ? undefined : (decoded(rawRoom) ?? rawRoom);
  const caller = await callerOf(request, env, room, path, query);
  if (!caller) return errorResponse(ApiError.unauthorized());
  // Only the room's object knows an invite's role as of now: it is told which invite asks.
  const who: Who | undefined = caller.inviteId === undefined ? undefined : { inviteId: caller.inviteId };

  if (sdkSocket && rawRoom !== undefined) {
    return method === "GET" ? socket(request, env, rawRoom, query, who) : errorResponse(ApiError.methodNotAllowed());
  }
  if (!roomPath || rawRoom === undefined || room === undefined) return notFound();
  const rest = seg.slice(3).join("/");
  const allow = (m: string, then: () => Promise<Response>) =>
    method === m ? then() : Promise.resolve(errorResponse(ApiError.methodNotAllowed()));
  const routes = routesOf(seg.slice(3));
  if (routes.length > 0) {
    const hit = routes.find((r) => r.verb === method);
    if (!hit) return errorResponse(ApiError.methodNotAllowed());
    const id = hit.id && { field: hit.id.field, value: decoded(hit.id.raw) ?? hit.id.raw };
    // A POST's operation is in its body (and the path's id); any other verb's is its path.
    if (hit.verb === "POST" && isMethod(hit.kind)) return operation(request, env, room, hit.kind, who, id ? { [id.field]: id.value } : {});
    return ask(env, room, pathOp(hit.kind, id), who);
  }
  if (rest === "messages") return allow("GET", () => page(env, room, query, MESSAGES_PAGE));
  if (rest === "execs") return allow("GET", () => page(env, room, query, EXECS_PAGE));
  if (rest === "ws") return allow("GET", () => socket(request, env, rawRoom, query, who));
  if (seg[3] === "tunnel" && seg.length === 5 && seg[4] !== "") return allow("GET", () => tunnel(request, env, room, seg[4], caller));
  if (seg[3] === "archive") {
    const folder = decoded(seg.slice(4).join("/"));
    if (folder === undefined) return errorResponse(ApiError.field("path", "is not valid percent-encoded UTF-8"));
    if (method === "GET") return getArchive(env, room, folder);
    if (method === "PUT") {
      // A client that goes away mid-push does not stop the push's own end (its scratch removed).
      const pushed = putArchive(env, room, folder, query, request, caller);
      ctx.waitUntil(pushed.then(() => undefined, () => undefined));
      return pushed;
    }
    return errorResponse(ApiError.methodNotAllowed());
  }
  if (rest === "diff") return allow("GET", () => getDiff(env, room, query));
  if (seg[3] === "files" && seg.length > 4) {
    const filePath = decoded(seg.slice(4).join("/"));
    if (filePath === undefined) return errorResponse(ApiError.field("path", "is not valid percent-encoded UTF-8"));
    // A path that ends in `/` (`files/` itself too) is a folder's listing.
    const folder = seg[seg.length - 1] === "";
    if (method === "GET") return folder ? listFolder(env, room, filePath.slice(0, -1)) : getFile(env, room, filePath);
    if (method === "DELETE") return deleteFile(env, room, filePath, query, caller);
    if (method === "PUT") return filePath === "" ? notFound() : putFile(env, room, filePath, query, request, caller);
    return errorResponse(ApiError.methodNotAllowed());
  }
  return notFound();
}

/** `GET /api/rooms`: every room used, the most recently updated first; the server's token only. */
async function roomList(request: Request, env: Env, method: string): Promise<Response> {
  const lister = listerOf(request, env);
  if (!lister) return errorResponse(ApiError.unauthorized());
  if (method !== "GET") return errorResponse(ApiError.methodNotAllowed());
  if (lister === "invite") return errorResponse(new ApiError(403, "forbidden", { role: ["only the server's token may list rooms"] }));
  return response(ok({ rooms: await lobbyStub(env).list() }));
}

function text(body: string): Response {
  return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
}

/** `POST /api/rooms/{room}/{…}`: checks the room and the body (with `fromPath`, the path's fields), then asks the room. */
async function operation(request: Request, env: Env, room: string, method: Method, who: Who | undefined, fromPath: Record<string, string> = {}): Promise<Response> {
  const details = roomDetails(room);
  let body;
  try {
    body = await jsonBody(request);
  } catch (e) {
    if (e instanceof ApiError && Object.keys(details).length > 0) throw ApiError.invalid(details);
    throw e;
  }
  // The path's fields join the body itself (not a copy: which numbers were written as floats is known of the parsed object).
  const op: Op = parseOp(method, Object.assign(body, fromPath), details);
  // An invite's `url` is the room's link as this request reached the backend.
  if (op.kind === "invite_create") op.link = linkOf(request);
  return roomOp(env, room, op, who);
}

/** How a request reached the backend: `http://HOST:PORT` (`https://` when so). */
function linkOf(request: Request): string {
  const url = new URL(request.url);
  return `${url.protocol}//${url.host}`;
}

/** An operation without a body (the lists, a kill, a deletion), once the room id is checked. */
async function ask(env: Env, room: string, op: Op, who: Who | undefined): Promise<Response> {
  const details = roomDetails(room);
  if (Object.keys(details).length > 0) throw ApiError.invalid(details);
  return roomOp(env, room, op, who);
}

/** What a page of the room's history is of: where the room serves it, and what its `before` is. */
interface PageOf {
  path: string;
  id: RegExp;
  notAnId: string;
}

const MESSAGES_PAGE: PageOf = { path: PAGE_PATH, id: /^[0-9]{1,20}$/, notAnId: "must be a message id" };
const EXECS_PAGE: PageOf = { path: EXECS_PAGE_PATH, id: /^x[0-9]{1,20}$/, notAnId: "must be a command id" };

/** `GET /api/rooms/{room}/messages?before&limit` and `GET /api/rooms/{room}/execs?before&limit` */
async function page(env: Env, room: string, query: string, of: PageOf): Promise<Response> {
  const details = roomDetails(room);
  let before: string | undefined;
  let limit = PAGE_DEFAULT;
  for (const [key, value] of new URLSearchParams(query)) {
    if (key === "before") {
      if (of.id.test(value)) before = value;
      else addDetail(details, "before", of.notAnId);
    } else if (key === "limit") {
      const n = /^\+?[0-9]+$/.test(value) ? Number(value.replace(/^\+/, "")) : NaN;
      if (n >= 1 && n <= PAGE_MAX) limit = n;
      else addDetail(details, "limit", "must be a whole number from 1 to 100");
    }
  }
  if (Object.keys(details).length > 0) throw ApiError.invalid(details);
  const params = new URLSearchParams({ limit: String(limit), ...(before !== undefined && { before }) });
  return roomStub(env, room).fetch(roomRequest(`${of.path}?${params}`));
}

/** Who a socket says it is (`user`, `_pk`), checked, and whether it wants deltas. */
function peerQuery(query: string, details: Details): URLSearchParams {
  const out = new URLSearchParams();
  for (const [key, value] of new URLSearchParams(query)) {
    if (key === "user") {
      const problem = nameProblem(value);
      if (problem) addDetail(details, "user", problem);
      else out.set("user", value);
    } else if (key === "_pk") {
      if (value === "" || Array.from(value).length > 64 || Array.from(value).some(isControl)) {
        addDetail(details, "_pk", "must be 1-64 printable characters");
      } else out.set("_pk", value);
    } else if (key === "deltas") out.set("deltas", value);
  }
  return out;
}

/**
 * `GET /api/rooms/{room}/ws` and `/agents/duet-agent/{room}` (upgrade),
 * forwarded to the room with who it is (its invite) and how it came (the
 * base of the invites it makes).
 */
async function socket(request: Request, env: Env, rawRoom: string, query: string, who: Who | undefined): Promise<Response> {
  const room = decoded(rawRoom) ?? rawRoom;
  const details = roomDetails(room);
  const peer = peerQuery(query, details);
  if (who?.inviteId !== undefined) peer.set("invite", who.inviteId);
  peer.set("link", linkOf(request));
  if (Object.keys(details).length > 0) throw ApiError.invalid(details);
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    const connection = (request.headers.get("connection") ?? "").toLowerCase();
    const problem = connection.includes("upgrade")
      ? "`Upgrade` header did not include 'websocket'"
      : "Connection header did not include 'upgrade'";
    throw ApiError.field("upgrade", problem);
  }
  return roomStub(env, room).fetch(new Request(`https://duet-agent/ws?${peer}`, request));
}
