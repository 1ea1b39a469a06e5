// Who a request is (docs/protocol.md "Invites, roles and approvals"): the
// Worker's `DUET_TOKEN` is owner in every room (and without one everyone
// is); any other token may be an invite's, which only its room's object
// knows (by its SHA-256): the Worker asks that room, so an invite works in
// its own room only, and not once it was revoked or expired.

import { OWNER, type Caller } from "./access";
import type { Env } from "./env";
import { same } from "./http";
import { INVITE_TOKEN, tokenHash } from "./invites";
import { trim, validRoomId } from "./text";
import { askCaller } from "./rooms";
import { redeemTicket } from "./tickets";

/** The tokens a request carries: its bearer token, and on a socket path its `?token=`s. */
function tokensOf(request: Request, path: string, query: string): string[] {
  const tokens: string[] = [];
  const header = request.headers.get("authorization");
  if (header?.startsWith("Bearer ")) tokens.push(trim(header.slice(7)));
  // Only the routes the contract names: the room's socket and a tunnel (a
  // preview checks its own), never a file that happens to be called `ws`.
  const socketPath = /^\/agents\/duet-agent\/[^/]+$/.test(path) || /^\/api\/rooms\/[^/]+\/(ws|tunnel\/[^/]+)$/.test(path);
  if (socketPath) for (const [k, v] of new URLSearchParams(query)) if (k === "token") tokens.push(v);
  return tokens;
}

/**
 * Who a request is: everyone is owner without a `DUET_TOKEN`, and so is
 * the server's token; an invite's token is looked up (by its SHA-256) in
 * its room's object, so it works in that room only. Undefined: 401.
 */
export async function callerOf(request: Request, env: Env, room: string | undefined, path: string, query: string): Promise<Caller | undefined> {
  const token = env.DUET_TOKEN ?? "";
  if (token === "") return OWNER;
  const caller = await credential(env, token, room, tokensOf(request, path, query));
  if (caller || room === undefined || !validRoomId(room) || !socketPath(path)) return caller;
  // A ticket (tickets.ts) opens the room's socket and nothing else.
  for (const [k, v] of new URLSearchParams(query)) {
    if (k !== "ticket") continue;
    const ticketCaller = await redeemTicket(env, room, v);
    if (ticketCaller) return ticketCaller;
  }
  return undefined;
}

/** Whether `path` is the room's socket (`/api/rooms/{room}/ws`, `/agents/duet-agent/{room}`). */
function socketPath(path: string): boolean {
  return /^\/agents\/duet-agent\/[^/]+$/.test(path) || /^\/api\/rooms\/[^/]+\/ws$/.test(path);
}

/** The first of `tokens` that is the server's token (owner) or an invite's of `room`; undefined when none is. */
export async function credential(env: Env, token: string, room: string | undefined, tokens: string[]): Promise<Caller | undefined> {
  if (tokens.some((t) => same(t, token))) return OWNER;
  if (room === undefined || !validRoomId(room)) return undefined;
  for (const t of tokens) {
    if (!INVITE_TOKEN.test(t)) continue;
    const caller = await askCaller(env, room, { hash: await tokenHash(t) });
    if (caller) return caller;
  }
  return undefined;
}

/**
 * Who asks for the room list (`GET /api/rooms`): the server's token (or a
 * Worker without one) may list; an invite may not, whatever its room. The
 * Worker cannot look an invite up without its room, so any token shaped as
 * an invite's counts as one (403, which tells nothing of the token);
 * anything else is undefined (401).
 */
export function listerOf(request: Request, env: Env): "owner" | "invite" | undefined {
  const token = env.DUET_TOKEN ?? "";
  if (token === "") return "owner";
  const tokens = tokensOf(request, "/api/rooms", "");
  if (tokens.some((t) => same(t, token))) return "owner";
  return tokens.some((t) => INVITE_TOKEN.test(t)) ? "invite" : undefined;
}
