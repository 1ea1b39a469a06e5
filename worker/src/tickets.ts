// Socket tickets (docs/protocol.md "The page"), as duet serve's
// src/server/tickets.rs: browsers cannot set `Authorization` on a
// WebSocket, and a token must never be in a request line, so the page
// trades its token (`POST /api/rooms/{room}/ticket`) for a ticket that
// opens this room's socket only (`?ticket=`), for DUET_TICKET_SECS (60),
// with the role of the token that made it. A ticket is `{expiresAt}.{mac}`
// (the Worker's token) or `{expiresAt}.{inviteId}.{mac}` (an invite's): an
// HMAC under a key made from DUET_TOKEN (every isolate has it; a ticket says
// nothing of it). One made from an invite stands on that invite: revoked or
// expired, it opens nothing, and its role is the invite's when it is used.

import type { Caller } from "./access";
import type { Env } from "./env";
import { same } from "./http";
import { askCaller } from "./rooms";

/** How long a ticket may be used, in ms. */
function lifetimeMs(env: Env): number {
  const secs = Number(env.DUET_TICKET_SECS ?? "60");
  return Number.isFinite(secs) && secs >= 0 ? secs * 1000 : 60_000;
}

/** base64url without padding. */
function base64url(bytes: ArrayBuffer): string {
  let text = "";
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The MAC of a ticket for `room`, of invite `invite` ("": the Worker's token), expiring at `expires` (ms). */
async function mac(env: Env, room: string, invite: string, expires: number): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(`duet socket tickets\0${env.DUET_TOKEN ?? ""}`),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const tag = await crypto.subtle.sign("HMAC", key, encoder.encode(`duet socket ticket\0${room}\0${invite}\0${expires}`));
  return base64url(tag);
}

/** A new ticket for a caller of `room` (with `inviteId`, an invite's), and when it expires (ms). */
export async function issueTicket(env: Env, room: string, inviteId: string | undefined): Promise<{ ticket: string; expiresAt: number }> {
  const expiresAt = Date.now() + lifetimeMs(env);
  const tag = await mac(env, room, inviteId ?? "", expiresAt);
  const ticket = inviteId === undefined ? `${expiresAt}.${tag}` : `${expiresAt}.${inviteId}.${tag}`;
  return { ticket, expiresAt };
}

/** Who a ticket of `room` is, if it is one that has not expired (its invite asked of the room now). */
export async function redeemTicket(env: Env, room: string, ticket: string): Promise<Caller | undefined> {
  const parts = ticket.split(".");
  if (parts.length !== 2 && parts.length !== 3) return undefined;
  if (!/^[0-9]{1,16}$/.test(parts[0])) return undefined;
  const expires = Number(parts[0]);
  const now = Date.now();
  if (expires <= now || expires > now + lifetimeMs(env)) return undefined;
  const invite = parts.length === 3 ? parts[1] : "";
  const given = parts[parts.length - 1];
  if (!same(given, await mac(env, room, invite, expires))) return undefined;
  if (invite === "") return { role: "owner" };
  return askCaller(env, room, { inviteId: invite });
}
