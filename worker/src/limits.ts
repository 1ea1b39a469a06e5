// Limits on what one socket and one room may ask for (docs/protocol.md
// "Limits"), so that a flooding client cannot slow its neighbours: token
// buckets (a burst up to the rate, refilled continuously), read from vars
// named as `duet serve`'s environment variables, with its defaults. A Worker
// has no single server, so `duet serve`'s server-wide socket cap
// (DUET_MAX_SOCKETS) has no counterpart: each room's object caps its own.

import type { Env } from "./env";
import { ApiError } from "./http";

/** The limits, as numbers. */
export interface RateLimits {
  socketFramesPerSec: number;
  socketBytesPerSec: number;
  socketMessagesPerMin: number;
  socketCommandsPerMin: number;
  roomMessagesPerMin: number;
  roomCommandsPerMin: number;
  maxRoomSockets: number;
}

/** A limit var: unset or not a whole number gives the default; 0 (as for
 * `duet serve`) means no limit. */
function limitVar(value: string | undefined, fallback: number): number {
  const text = (value ?? "").trim();
  const n = Number(text);
  if (text === "" || !Number.isSafeInteger(n) || n < 0) return fallback;
  return n === 0 ? Number.POSITIVE_INFINITY : n;
}

export function rateLimits(env: Env): RateLimits {
  return {
    socketFramesPerSec: limitVar(env.DUET_SOCKET_FRAMES_PER_SEC, 100),
    socketBytesPerSec: limitVar(env.DUET_SOCKET_BYTES_PER_SEC, 1_048_576),
    socketMessagesPerMin: limitVar(env.DUET_SOCKET_MESSAGES_PER_MIN, 30),
    socketCommandsPerMin: limitVar(env.DUET_SOCKET_COMMANDS_PER_MIN, 120),
    roomMessagesPerMin: limitVar(env.DUET_ROOM_MESSAGES_PER_MIN, 120),
    roomCommandsPerMin: limitVar(env.DUET_ROOM_COMMANDS_PER_MIN, 600),
    maxRoomSockets: limitVar(env.DUET_MAX_ROOM_SOCKETS, 256),
  };
}

/** What a socket over the cap is told to wait before trying again. */
export const SOCKETS_RETRY_MS = 5_000;

/** A token bucket of `rate` tokens per `periodMs`, full at first. */
export class Bucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly rate: number,
    private readonly periodMs: number,
    /** Why a take failed, for `details.limit`. */
    readonly rule: string,
    now = Date.now(),
  ) {
    this.tokens = rate;
    this.at = now;
  }

  /**
   * Takes `cost` tokens (at most the whole bucket, so that one large frame
   * can pass a full one): 0 when taken, else the milliseconds until they
   * will be there (nothing is taken then).
   */
  take(cost = 1, now = Date.now()): number {
    const need = Math.min(cost, this.rate);
    this.tokens = Math.min(this.rate, this.tokens + ((now - this.at) * this.rate) / this.periodMs);
    this.at = Math.max(this.at, now);
    if (this.tokens >= need) {
      this.tokens -= need;
      return 0;
    }
    return Math.max(1, Math.ceil(((need - this.tokens) * this.periodMs) / this.rate));
  }

  /** Takes `cost`, or throws the 429 saying when to try again. */
  takeOrThrow(cost = 1): void {
    const wait = this.take(cost);
    if (wait > 0) throw ApiError.rateLimited(this.rule, wait);
  }
}

const SEC = 1_000;
const MIN = 60_000;

/** The buckets of one room (HTTP and sockets together). */
export class RoomBuckets {
  readonly messages: Bucket;
  readonly commands: Bucket;

  constructor(l: RateLimits) {
    this.messages = new Bucket(
      l.roomMessagesPerMin,
      MIN,
      `a room stores at most ${l.roomMessagesPerMin} messages a minute (DUET_ROOM_MESSAGES_PER_MIN)`,
    );
    this.commands = new Bucket(
      l.roomCommandsPerMin,
      MIN,
      `a room runs at most ${l.roomCommandsPerMin} people's commands a minute (DUET_ROOM_COMMANDS_PER_MIN)`,
    );
  }
}

/** The buckets of one socket. */
export class SocketBuckets {
  readonly frames: Bucket;
  readonly bytes: Bucket;
  readonly messages: Bucket;
  readonly commands: Bucket;

  constructor(l: RateLimits) {
    this.frames = new Bucket(
      l.socketFramesPerSec,
      SEC,
      `a socket sends at most ${l.socketFramesPerSec} frames a second (DUET_SOCKET_FRAMES_PER_SEC)`,
    );
    this.bytes = new Bucket(
      l.socketBytesPerSec,
      SEC,
      `a socket sends at most ${l.socketBytesPerSec} bytes a second (DUET_SOCKET_BYTES_PER_SEC)`,
    );
    this.messages = new Bucket(
      l.socketMessagesPerMin,
      MIN,
      `a socket sends at most ${l.socketMessagesPerMin} messages a minute (DUET_SOCKET_MESSAGES_PER_MIN)`,
    );
    this.commands = new Bucket(
      l.socketCommandsPerMin,
      MIN,
      `a socket runs at most ${l.socketCommandsPerMin} commands a minute (DUET_SOCKET_COMMANDS_PER_MIN)`,
    );
  }

  /** Whether a terminal frame of `size` bytes passes the bytes rate (a keystroke is a frame: not counted as one). */
  termFrame(size: number): ApiError | undefined {
    const wait = this.bytes.take(size);
    return wait > 0 ? ApiError.rateLimited(this.bytes.rule, wait) : undefined;
  }

  /** Whether a frame of `size` bytes passes both rates: 0, else the 429 of the first it exceeds. */
  frame(size: number): ApiError | undefined {
    for (const [bucket, cost] of [
      [this.frames, 1],
      [this.bytes, size],
    ] as const) {
      const wait = bucket.take(cost);
      if (wait > 0) return ApiError.rateLimited(bucket.rule, wait);
    }
    return undefined;
  }
}
