// Answers of docs/protocol.md: successes (a status and a body serialized
// once, in the wire's field order) and errors (400 with per-field
// `details`, 401, 405, 413, 429 and 500, 503 with `Retry-After`), and reading a
// request's body within its limit.

import { MAX_BODY } from "./protocol";
import { concatBytes } from "./sandbox/bytes";

/** Per-field validation messages: the `details` of a 400. */
export type Details = Record<string, string[]>;

/** Adds `message` to `field`. */
export function addDetail(details: Details, field: string, message: string): void {
  (details[field] ??= []).push(message);
}

/** `details` with its fields in byte order, as `duet serve` sends them. */
export function sortedDetails(details: Details): Details {
  const out: Details = {};
  for (const key of Object.keys(details).sort(byteOrder)) out[key] = details[key];
  return out;
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** An answer as plain data: a status and its body, serialized once. */
export interface Reply {
  status: number;
  /** The JSON body, already serialized. */
  body: string;
  /** Seconds, for 503 (and 429). */
  retryAfter?: number;
  /** Where the time went (`name;dur=ms`), sent as `Server-Timing` (worker/bench.sh reads it). */
  timing?: string[];
}

/** An error answer: a status and the `{"error", "details"?}` body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly details?: Details,
    readonly retryAfter?: number,
    /** 429 and 503: when to try again, also in the body. */
    readonly retryAfterMs?: number,
  ) {
    super(error);
  }

  /** 429: over a rate limit (`rule` says which); try again after `ms`. */
  static rateLimited(rule: string, ms: number): ApiError {
    return new ApiError(429, "rate limited", { limit: [rule] }, Math.max(1, Math.ceil(ms / 1000)), ms);
  }

  /** 503: the room has as many sockets as it takes. */
  static tooManySockets(ms: number): ApiError {
    return new ApiError(503, "too many sockets", undefined, Math.max(1, Math.ceil(ms / 1000)), ms);
  }

  /** 400 with the given per-field details. */
  static invalid(details: Details): ApiError {
    return new ApiError(400, "invalid request", details);
  }

  /** 400 naming one field. */
  static field(field: string, message: string): ApiError {
    return ApiError.invalid({ [field]: [message] });
  }

  static internal(error: string): ApiError {
    return new ApiError(500, error);
  }

  static unauthorized(): ApiError {
    return new ApiError(401, "unauthorized");
  }

  static tooLarge(): ApiError {
    return new ApiError(413, "body too large");
  }

  static methodNotAllowed(): ApiError {
    return new ApiError(405, "method not allowed");
  }

  /** 503 while the room's sandbox starts. */
  static starting(retryAfterSecs: number): ApiError {
    return new ApiError(503, "the sandbox is starting", undefined, Math.max(1, Math.ceil(retryAfterSecs)));
  }

  /** The body, serialized. */
  bodyJson(): object {
    return {
      error: this.error,
      ...(this.details !== undefined && { details: sortedDetails(this.details) }),
      ...(this.retryAfterMs !== undefined && { retryAfterMs: this.retryAfterMs }),
    };
  }

  reply(): Reply {
    return { status: this.status, body: JSON.stringify(this.bodyJson()), retryAfter: this.retryAfter };
  }
}

/** 200 with `body`. */
export function ok(body: object): Reply {
  return { status: 200, body: JSON.stringify(body) };
}

/** A 200 whose body is JSON text already. */
export function okText(body: string): Reply {
  return { status: 200, body };
}

/** The HTTP response of a reply. */
export function response(reply: Reply): Response {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (reply.retryAfter !== undefined) headers["retry-after"] = String(reply.retryAfter);
  if (reply.timing !== undefined) headers["server-timing"] = reply.timing.join(", ");
  return new Response(reply.body, { status: reply.status, headers });
}

export function errorResponse(e: ApiError): Response {
  return response(e.reply());
}

/** 404 in plain text. */
export function notFound(): Response {
  return new Response("not found", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
}

/** The bytes of a request's body, or 413 beyond `limit` (declared or streamed). */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of bodyChunks(request, limit)) chunks.push(chunk);
  return concatBytes(chunks);
}

/** A request's body as it arrives; past `limit` bytes (declared or sent) a 413, an unreadable one a 400. */
export async function* bodyChunks(request: Request, limit: number): AsyncGenerator<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "");
  if (Number.isFinite(declared) && declared > limit) throw ApiError.tooLarge();
  if (!request.body) return;
  const reader = request.body.getReader();
  let size = 0;
  for (;;) {
    let part: ReadableStreamReadResult<Uint8Array>;
    try {
      part = await reader.read();
    } catch (e) {
      throw ApiError.field("body", `could not be read: ${describe(e)}`);
    }
    if (part.done) return;
    size += part.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw ApiError.tooLarge();
    }
    yield part.value;
  }
}

export type JsonObject = Record<string, unknown>;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A body that is a JSON object; empty (or white space) means `{}`. */
export function parseObject(bytes: Uint8Array): JsonObject {
  if (bytes.every((b) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0x0c)) return {};
  let value: unknown;
  try {
    value = readJson(strictUtf8.decode(bytes));
  } catch (e) {
    throw ApiError.field("body", `is not valid JSON: ${describe(e)}`);
  }
  if (!isObject(value)) throw ApiError.field("body", "must be a JSON object");
  const problem = notServeJson(value);
  if (problem) throw ApiError.field("body", problem);
  return value;
}

/** The numbers of parsed JSON written with a fraction or an exponent (`1e3`, `1000.0`), by the object or array holding them. */
const writtenAsFloat = new WeakMap<object, Set<string>>();

/**
 * JSON text as `duet serve` reads it (serde_json): a number beyond a
 * double's range is an error (JSON.parse would read Infinity), and a number
 * written with a fraction or an exponent is a float, never a whole number,
 * whatever its value (`isWhole`).
 */
export function readJson(text: string): unknown {
  return JSON.parse(text, function (this: object, key: string, value: unknown, context?: { source?: string }) {
    if (typeof value !== "number") return value;
    if (!Number.isFinite(value)) throw new SyntaxError("number out of range");
    if (context?.source !== undefined && /[.eE]/.test(context.source)) {
      let keys = writtenAsFloat.get(this);
      if (!keys) writtenAsFloat.set(this, (keys = new Set()));
      keys.add(key);
    }
    return value;
  });
}

/** Whether `holder[key]` is a whole number, written as one (`1000`; not `1e3` or `1000.0`, which serde_json reads as floats). */
export function isWhole(holder: object, key: string): boolean {
  const value: unknown = (holder as Record<string, unknown>)[key];
  return typeof value === "number" && Number.isInteger(value) && !writtenAsFloat.get(holder)?.has(key);
}

/** A lone UTF-16 surrogate (`"\ud800"`), not a character. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Arrays and objects nest at most this deep in JSON `duet serve` reads (serde_json's limit). */
const MAX_NESTING = 127;

/**
 * Why a parsed JSON value is not what `duet serve` would accept, if it is
 * not: JSON lets a string escape a lone surrogate, which is no character
 * (serde_json refuses it, and the sandbox could not pass it on); and
 * serde_json reads arrays and objects nested MAX_NESTING deep at most.
 */
export function notServeJson(value: unknown, depth = 0): string | undefined {
  if (typeof value === "string") {
    return LONE_SURROGATE.test(value) ? "is not valid JSON: a string holds a lone UTF-16 surrogate" : undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  if (depth >= MAX_NESTING) return `is not valid JSON: arrays and objects nest more than ${MAX_NESTING} deep`;
  for (const [k, v] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    const problem = notServeJson(k, depth + 1) ?? notServeJson(v, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

/** A JSON body of at most 1 MiB that is an object. */
export async function jsonBody(request: Request): Promise<JsonObject> {
  return parseObject(await readBody(request, MAX_BODY));
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An error's message, for a person to read. */
export function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

const encoder = new TextEncoder();

/** Compares secrets in time independent of where they differ. */
export function same(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}
