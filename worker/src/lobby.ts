// The room list (`GET /api/rooms`, docs/protocol.md): Durable Objects
// cannot be listed, so one named object, the lobby, keeps a row per room
// that was ever used: how many people are in it now and when it last
// stored a record. Each room tells it (LobbyNotes) once per change of
// those two, never per frame; the Worker asks it for the list.

import { DurableObject } from "cloudflare:workers";
import type { Env } from "./env";
import { describe } from "./http";

/** What the lobby is told of a room; absent fields are unchanged. */
export interface RoomNews {
  /** Distinct people (socket names) connected now. */
  people?: number;
  /** The ts of a record the room just stored: the room's newest. */
  updatedAt?: number;
  /** The room was used now (someone joined, an invite or the policy stored): its time when it has no record yet. */
  usedAt?: number;
}

/** A row of the list, as `GET /api/rooms` answers it. */
export interface RoomSummary {
  roomId: string;
  people: number;
  updatedAt: number;
}

/** The one lobby's name. */
const LOBBY = "lobby";

export class DuetLobby extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS duet_rooms (room TEXT PRIMARY KEY, people INTEGER NOT NULL, updated_at INTEGER NOT NULL)",
    );
  }

  /**
   * Room `room` changed. A record's ts only moves `updatedAt` forward (they
   * may arrive out of order); a use is the room's time only while it has
   * none; a count alone never adds a room (a room that started but was never used).
   */
  seen(room: string, news: RoomNews): void {
    const sql = this.ctx.storage.sql;
    const at = news.updatedAt ?? news.usedAt;
    if (at === undefined) {
      if (news.people !== undefined) sql.exec("UPDATE duet_rooms SET people = ? WHERE room = ?", news.people, room);
      return;
    }
    sql.exec(
      `INSERT INTO duet_rooms (room, people, updated_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (room) DO UPDATE SET people = coalesce(?4, people), updated_at = max(updated_at, ?5)`,
      room,
      news.people ?? 0,
      at,
      news.people ?? null,
      news.updatedAt ?? 0,
    );
  }

  /** Every room, the most recently updated first. */
  list(): RoomSummary[] {
    return this.ctx.storage.sql
      .exec<{ room: string; people: number; updated_at: number }>("SELECT room, people, updated_at FROM duet_rooms ORDER BY updated_at DESC, room")
      .toArray()
      .map((r) => ({ roomId: r.room, people: r.people, updatedAt: r.updated_at }));
  }
}

export function lobbyStub(env: Env): DurableObjectStub<DuetLobby> {
  return env.DuetLobby.get(env.DuetLobby.idFromName(LOBBY));
}

/**
 * A room's side: what changed since the lobby was last told, sent one call
 * at a time (news noted meanwhile go together in the next), so that the
 * lobby sees a room's changes in order. A failure is logged: the list is
 * a summary, the room works on.
 */
export class LobbyNotes {
  private unsent?: RoomNews;
  private sending: Promise<void> = Promise.resolve();
  private people?: number;
  /** The newest record's ts noted: an older or equal one (a command's end, stamped with its start) changes nothing. */
  private newest?: number;

  constructor(
    private readonly env: Env,
    private readonly room: string,
  ) {}

  /** A record stored at `ts`. */
  stored(ts: number): void {
    if (this.newest !== undefined && ts <= this.newest) return;
    this.newest = ts;
    this.note({ updatedAt: ts });
  }

  /** The room was used (its time while it has no record). */
  used(): void {
    this.note({ usedAt: Date.now() });
  }

  /** `people` are connected now: told when the count changed. */
  count(people: number): void {
    if (people === this.people) return;
    this.people = people;
    this.note({ people });
  }

  /** Resolves once everything noted so far reached the lobby (or failed to). */
  settled(): Promise<void> {
    return this.sending;
  }

  private note(news: RoomNews): void {
    const u = this.unsent ?? {};
    this.unsent = {
      ...u,
      ...news,
      ...(u.updatedAt !== undefined && news.updatedAt !== undefined && { updatedAt: Math.max(u.updatedAt, news.updatedAt) }),
      ...(u.usedAt !== undefined && news.usedAt !== undefined && { usedAt: Math.min(u.usedAt, news.usedAt) }),
    };
    this.sending = this.sending.then(() => this.send());
  }

  private async send(): Promise<void> {
    const news = this.unsent;
    if (!news || this.env.DuetLobby === undefined) return;
    this.unsent = undefined;
    try {
      await lobbyStub(this.env).seen(this.room, news);
    } catch (e) {
      console.error(`room ${this.room}: telling the lobby failed: ${describe(e)}`);
    }
  }
}
