// A room's invites (docs/protocol.md "Invites, roles and approvals"): ids
// `i1`, `i2`, … never reused, tokens (`duet_inv_` and 40 hex digits) shown
// once and kept only as their SHA-256, expiry, revocation and role
// changes, all in the room's Durable Object storage (store.ts). The
// Worker hashes a token it does not know and asks the room (`caller`).

import type { Caller, RoomRole } from "./access";
import { ApiError } from "./http";
import type { Store, StoredInvite } from "./store";

export interface Invite {
  id: string;
  role: RoomRole;
  name?: string;
  /** ms since the epoch. */
  expiresAt: number;
  createdAt: number;
  /** Who made it. */
  by: string;
}

/** What an invite token looks like (anything else is never looked up). */
export const INVITE_TOKEN = /^duet_inv_[0-9a-f]{40}$/;

/** A new invite token: `duet_inv_` and 40 hex digits of crypto randomness. */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(20));
  return `duet_inv_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The SHA-256 of a token, in hex: all the room keeps of it. */
export async function tokenHash(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** An invite in duet serve's field order. */
export function inviteJson(i: Invite): object {
  return {
    id: i.id,
    role: i.role,
    ...(i.name !== undefined && { name: i.name }),
    expiresAt: i.expiresAt,
    createdAt: i.createdAt,
    by: i.by,
  };
}

/** 404: an invite id the room does not have (or no longer: revoked, expired). */
function noSuchInvite(id: string): ApiError {
  return new ApiError(404, "no such invite", { inviteId: [`no invite ${JSON.stringify(id)} in this room`] });
}

export class Invites {
  private readonly all: StoredInvite[];

  constructor(private readonly store: Store) {
    this.all = store.invites();
  }

  /** Whether an invite can still be used. */
  private live(i: StoredInvite, now = Date.now()): boolean {
    return !i.revoked && i.invite.expiresAt > now;
  }

  /** The invites that can still be used, oldest first. */
  list(): Invite[] {
    const now = Date.now();
    return this.all.filter((i) => this.live(i, now)).map((i) => i.invite);
  }

  /** A new invite and its token (the one time it is shown); it ends by `notAfter` (ms) at the latest. */
  async create(
    role: RoomRole,
    expiresInSecs: number,
    name: string | undefined,
    by: string,
    notAfter = Number.POSITIVE_INFINITY,
  ): Promise<{ invite: Invite; token: string }> {
    const token = newToken();
    const hash = await tokenHash(token);
    const now = Date.now();
    const invite: Invite = {
      id: `i${this.store.takeInviteNumber()}`,
      role,
      ...(name !== undefined && { name }),
      expiresAt: Math.min(now + expiresInSecs * 1000, notAfter),
      createdAt: now,
      by,
    };
    const stored = { invite, hash, revoked: false };
    this.store.saveInvite(stored);
    this.all.push(stored);
    return { invite, token };
  }

  /** The live invite `id`, or the 404. */
  find(id: string): Invite {
    const found = this.all.find((i) => i.invite.id === id && this.live(i));
    if (!found) throw noSuchInvite(id);
    return found.invite;
  }

  /** Revokes invite `id` (404 unless it is live): its token stops working at once. */
  revoke(id: string): void {
    const found = this.all.find((i) => i.invite.id === id && this.live(i));
    if (!found) throw noSuchInvite(id);
    found.revoked = true;
    this.store.saveInvite(found);
  }

  /** Gives invite `id` another role (404 unless it is live). */
  setRole(id: string, role: RoomRole): Invite {
    const found = this.all.find((i) => i.invite.id === id && this.live(i));
    if (!found) throw noSuchInvite(id);
    found.invite = { ...found.invite, role };
    this.store.saveInvite(found);
    return found.invite;
  }

  /** Who a token of this room is, by its hash; undefined when no live invite has it. */
  byHash(hash: string): Caller | undefined {
    const found = this.all.find((i) => i.hash === hash && this.live(i));
    return found && callerOf(found.invite);
  }

  /** Who invite `id` is now; undefined once it was revoked or expired. */
  caller(id: string): Caller | undefined {
    const found = this.all.find((i) => i.invite.id === id && this.live(i));
    return found && callerOf(found.invite);
  }

  /** The invite `id` as given out (live or not), for its expiry. */
  expiresAt(id: string): number | undefined {
    return this.all.find((i) => i.invite.id === id)?.invite.expiresAt;
  }
}

function callerOf(i: Invite): Caller {
  return { role: i.role, inviteId: i.id, expiresAt: i.expiresAt, ...(i.name !== undefined && { name: i.name }) };
}
