// A room's checkpoints (docs/protocol.md "Checkpoints, restore and fork"):
// copies of /workspace kept out of the container (the Sandbox SDK's
// createBackup, in the BACKUP_BUCKET R2 bucket), listed in the room's
// storage with their handles. Ids `c1`, `c2`… are never reused; automatic
// ones are trimmed to the last DUET_AUTO_CHECKPOINTS; each expires after
// DUET_CHECKPOINT_TTL_SECS (`expiresAt`, then it leaves the list and its
// objects are deleted); the room's disk (DUET_DISK_MB) holds /workspace and
// every checkpoint, checked before anything is copied.

import { ApiError, describe } from "./http";
import type { Checkpoint } from "./protocol";
import { copyPrefix, deletePrefix } from "./sandbox/backup";
import type { RoomSandbox, WorkspaceCopy } from "./sandbox/types";
import type { StoredCheckpoint } from "./store";

/** Who takes automatic checkpoints. */
export const AUTO_BY = "duet";
/**
 * The SDK refuses to restore a backup within a minute of its own expiry:
 * its lifetime is the checkpoint's and this much more, so a listed one can
 * always be restored.
 */
const SDK_TTL_MARGIN_SECS = 300;

export interface CheckpointHost {
  sandbox(): RoomSandbox;
  bucket: R2Bucket;
  takeNumber(): number;
  save(c: StoredCheckpoint): void;
  forget(id: string): void;
  /** The list changed (`checkpoints` in the state). */
  changed(list: Checkpoint[]): void;
}

export interface CheckpointSettings {
  autoKeep: number;
  ttlSecs: number;
  diskBytes: number;
}

/** What a new checkpoint is: a person's (with or without a name; `push` names it `push-N`, after a push) or an automatic one before a turn. */
export type NewCheckpoint = { by: string; name?: string; auto: false; push?: true } | { by: typeof AUTO_BY; auto: true; turnId: string };

/** The name of a push's checkpoint. */
const PUSH_NAME = /^push-[0-9]+$/;

/** 404 for an id the room does not have. */
export function noSuchCheckpoint(id: string): ApiError {
  return new ApiError(404, "no such checkpoint", { checkpointId: [`no checkpoint ${JSON.stringify(id)} in this room`] });
}

/** Deletes a copy's objects; a failure is logged (the copy then expires in R2 by its own lifetime only). */
export async function dropCopy(bucket: R2Bucket, copy: WorkspaceCopy): Promise<void> {
  try {
    await deletePrefix(bucket, copyPrefix(copy.id));
  } catch (e) {
    console.error(`deleting the copy ${copy.id} failed: ${describe(e)}`);
  }
}

export class Checkpoints {
  private readonly entries: StoredCheckpoint[];
  /** One checkpoint at a time: the disk check and the copy are one step. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly host: CheckpointHost,
    private readonly settings: CheckpointSettings,
    stored: StoredCheckpoint[],
  ) {
    this.entries = stored;
  }

  /** The checkpoints, oldest first (expired ones already dropped by prune). */
  list(): Checkpoint[] {
    return this.entries.map((e) => e.checkpoint);
  }

  /** The checkpoint `id`, or its 404. */
  find(id: string): StoredCheckpoint {
    const found = this.entries.find((e) => e.checkpoint.id === id && !expired(e.checkpoint));
    if (!found) throw noSuchCheckpoint(id);
    return found;
  }

  /**
   * The checkpoint a diff compares with: `from` (an id, else a name; its
   * 404), or the newest push's (404 on `from` when the room has none).
   */
  base(from: string | undefined): StoredCheckpoint {
    const live = this.entries.filter((e) => !expired(e.checkpoint));
    if (from === undefined) {
      const push = live.filter((e) => PUSH_NAME.test(e.checkpoint.name)).at(-1);
      if (!push) throw new ApiError(404, "no such checkpoint", { from: ["the room has no push to compare with"] });
      return push;
    }
    const found = live.find((e) => e.checkpoint.id === from) ?? live.find((e) => e.checkpoint.name === from);
    if (!found) throw noSuchCheckpoint(from);
    return found;
  }

  /** Bytes the room's disk has free: DUET_DISK_MB less /workspace and every checkpoint. */
  async free(): Promise<number> {
    this.prune();
    const used = await this.host.sandbox().workspaceBytes();
    const kept = this.entries.reduce((sum, e) => sum + e.checkpoint.size, 0);
    return Math.max(0, this.settings.diskBytes - used - kept);
  }

  /** Drops the expired checkpoints (their objects are deleted); whether any was. */
  prune(now = Date.now()): boolean {
    const gone = this.entries.filter((e) => expired(e.checkpoint, now));
    for (const e of gone) this.remove(e);
    return gone.length > 0;
  }

  /** Takes a checkpoint (one at a time); throws its 409 or 507 before anything is copied. */
  create(what: NewCheckpoint): Promise<Checkpoint> {
    const made = this.queue.then(() => this.take(what));
    this.queue = made.catch(() => {});
    return made;
  }

  /** Before the first command of turn `turnId`: an automatic checkpoint, unless it does not fit (then the turn runs on). */
  async beforeTurn(turnId: string): Promise<void> {
    if (this.settings.autoKeep === 0) return;
    try {
      await this.create({ by: AUTO_BY, auto: true, turnId });
    } catch (e) {
      console.error(`the automatic checkpoint before turn ${turnId} was skipped: ${e instanceof ApiError ? JSON.stringify(e.bodyJson()) : describe(e)}`);
    }
  }

  /** Deletes checkpoint `id` (404 when there is none), freeing its space. */
  delete(id: string): void {
    this.remove(this.find(id));
    this.host.changed(this.list());
  }

  /** Cleanup: every checkpoint goes, objects and all. */
  async clear(): Promise<void> {
    const all = this.entries.splice(0);
    for (const e of all) this.host.forget(e.checkpoint.id);
    await Promise.all(all.map((e) => dropCopy(this.host.bucket, e.copy)));
  }

  private async take(what: NewCheckpoint): Promise<Checkpoint> {
    this.prune();
    if (!what.auto && what.name !== undefined) this.refuseTaken(what.name);
    const sandbox = this.host.sandbox();
    const needs = await sandbox.workspaceBytes();
    const kept = this.entries.reduce((sum, e) => sum + e.checkpoint.size, 0);
    const free = Math.max(0, this.settings.diskBytes - needs - kept);
    if (needs > free) {
      throw new ApiError(507, "the room's disk is full", { checkpoint: [`it needs ${needs} bytes; ${free} are free`] });
    }
    const n = this.host.takeNumber();
    const name = what.auto ? `auto-${n}` : (what.name ?? (what.push ? `push-${n}` : `checkpoint-${n}`));
    if (what.auto || what.name === undefined) this.refuseTaken(name);
    const copy = await sandbox.copyWorkspace(name, this.settings.ttlSecs + SDK_TTL_MARGIN_SECS);
    const ts = Date.now();
    const checkpoint: Checkpoint = {
      id: `c${n}`,
      name,
      ts,
      by: what.by,
      size: needs,
      auto: what.auto,
      ...(what.auto && { turnId: what.turnId }),
      expiresAt: ts + this.settings.ttlSecs * 1000,
    };
    const entry = { checkpoint, copy };
    try {
      this.host.save(entry);
    } catch (e) {
      await dropCopy(this.host.bucket, copy);
      throw ApiError.internal(`the checkpoint could not be stored: ${describe(e)}`);
    }
    this.entries.push(entry);
    if (what.auto) this.trimAutomatic();
    this.host.changed(this.list());
    return checkpoint;
  }

  /** 409 when the room has a checkpoint of that name. */
  private refuseTaken(name: string): void {
    if (this.entries.some((e) => e.checkpoint.name === name)) {
      throw new ApiError(409, "a checkpoint has that name", { name: [`checkpoint ${JSON.stringify(name)} exists already`] });
    }
  }

  /** Only the last `autoKeep` automatic checkpoints stay. */
  private trimAutomatic(): void {
    const autos = this.entries.filter((e) => e.checkpoint.auto);
    for (const e of autos.slice(0, Math.max(0, autos.length - this.settings.autoKeep))) this.remove(e);
  }

  private remove(e: StoredCheckpoint): void {
    const at = this.entries.indexOf(e);
    if (at >= 0) this.entries.splice(at, 1);
    try {
      this.host.forget(e.checkpoint.id);
    } catch (err) {
      console.error(`forgetting checkpoint ${e.checkpoint.id} failed: ${describe(err)}`);
    }
    void dropCopy(this.host.bucket, e.copy);
  }
}

function expired(c: Checkpoint, now = Date.now()): boolean {
  return c.expiresAt !== undefined && now >= c.expiresAt;
}
