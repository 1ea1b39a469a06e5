// What the adapter's file calls share (paths in /workspace, bounded waits,
// a file's body from the SDK's stream, uploads in parts) and how it reads
// the SDK's errors (a container that is starting).

import type { FileStreamEvent } from "@cloudflare/sandbox";
import { concatBytes, fromBase64 } from "./bytes";
import { shellQuote } from "./signal";
import { BadPath, DiskFull, NothingListens, SandboxStarting } from "./types";

export const WORKSPACE_DIR = "/workspace";

export function workspacePath(path: string): string {
  return `${WORKSPACE_DIR}/${path}`;
}


/** How long a file's type check, or the start of its read, may take. */
export const FILE_WAIT_MS = 30_000;
/** Bytes of an upload sent to the sandbox in one call. */
export const UPLOAD_PART_BYTES = 1024 * 1024;
/** The hidden folder an upload's parts wait in (removed when it ends). */
export const UPLOAD_DIR_PREFIX = ".duet-upload-";

/** `promise`, or an error saying what took too long past FILE_WAIT_MS. */
export async function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${FILE_WAIT_MS / 1000} s`)), FILE_WAIT_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The bytes of readFileStream's events after its metadata, decoded one at a time. */
export function fileBody(events: AsyncIterator<FileStreamEvent>, encoding: "utf-8" | "base64"): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await events.next();
      if (next.done) return controller.error(new Error("the file's stream ended before it was complete"));
      const event = next.value;
      if (event.type === "chunk") {
        controller.enqueue(encoding === "base64" ? fromBase64(event.data) : new TextEncoder().encode(event.data));
      } else if (event.type === "complete") {
        controller.close();
      } else if (event.type === "error") {
        controller.error(new Error(event.error));
      }
    },
    async cancel() {
      await events.return?.();
    },
  });
}

/** Gathers chunks into parts of `size` bytes. */
export class PartBuffer {
  private held: Uint8Array[] = [];
  private bytes = 0;
  constructor(private readonly size: number) {}

  /** The parts `chunk` completes. */
  add(chunk: Uint8Array): Uint8Array[] {
    const done: Uint8Array[] = [];
    let rest = chunk;
    while (this.bytes + rest.byteLength >= this.size) {
      const take = this.size - this.bytes;
      this.held.push(rest.subarray(0, take));
      this.bytes += take;
      rest = rest.subarray(take);
      done.push(this.rest());
    }
    if (rest.byteLength > 0) {
      this.held.push(rest);
      this.bytes += rest.byteLength;
    }
    return done;
  }

  /** What is held, as one part (possibly empty); the buffer is then empty. */
  rest(): Uint8Array {
    const part = concatBytes(this.held);
    this.held = [];
    this.bytes = 0;
    return part;
  }
}

/** The seam's error for a failed file call. */
export function fileError(e: unknown): Error {
  const text = message(e);
  const starting = startingDelay(e);
  if (starting !== null) return new SandboxStarting(starting);
  if (/NO_SPACE|no space|ENOSPC|disk is full|EDQUOT|quota/i.test(text)) return new DiskFull();
  // The SDK's code (`INVALID_PATH: `) is no part of the sentence the client is shown.
  if (/symlink|outside the workspace|INVALID_PATH|PATH_SECURITY/i.test(text)) return new BadPath(text.replace(/^[A-Z_]+: /, ""));
  return e instanceof Error ? e : new Error(text);
}

/**
 * Seconds to wait when `e` says the container is starting (or the account
 * is over its container capacity), else null. Errors lose their class
 * across Durable Object RPC, so this reads the message.
 */
export function startingDelay(e: unknown): number | null {
  const text = message(e);
  if (!/CONTAINER_UNAVAILABLE|container is (starting|unavailable|not ready)|no container instance|max(imum)? ?container instances|over capacity/i.test(text)) {
    return null;
  }
  const given = /retry after (\d+)/i.exec(text);
  if (given) return Number(given[1]);
  return /instances|capacity/i.test(text) ? 10 : 3;
}

/** `e` as the room should see it: a container still starting becomes SandboxStarting (its retry delay). */
export function asStarting(e: unknown): unknown {
  const starting = startingDelay(e);
  return starting === null ? e : new SandboxStarting(starting);
}

export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The SDK's control server inside the container: not one of the room's ports. */
export const CONTROL_PORT = 3000;

export function nothingListens(port: number): Response {
  return new Response(JSON.stringify({ error: new NothingListens(port).message }), {
    status: 502,
    headers: { "content-type": "application/json" },
  });
}

/**
 * An upgrade's answer; a 502 instead of one is NothingListens (a refused
 * upgrade's body does not come back through fetch).
 */
export function refusedUpgrade(res: Response, port: number): Response {
  if (!res.webSocket && res.status === 502) throw new NothingListens(port);
  return res;
}

/**
 * Disposes what an SDK call answered over RPC: its methods are stubs, which
 * would keep the room's object from hibernating until collected.
 */
export function release(answer: unknown): void {
  const dispose = (Symbol as unknown as { dispose?: symbol }).dispose;
  if (!dispose || typeof answer !== "object" || answer === null) return;
  try {
    (answer as Record<symbol, (() => void) | undefined>)[dispose]?.();
  } catch {
    // nothing to release
  }
}
