// The OpenAI-compatible chat-completions API with streaming (Workers AI's
// OpenAI-compatible endpoint in production), with the error texts of
// src/ai/openai.rs and src/ai/provider.rs.

import { describe } from "./http";
import { TOOLS, ToolCalls, type ToolCall, type ToolCallPiece, type ToolOffer } from "./tools";

export type ChatRole = "system" | "user" | "assistant";
export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/** Why a model gave no (complete) answer; `message` is shown in the room after "Model error: ". */
export class ModelError extends Error {}

/** Characters of an error answer kept for the message in the room. */
const ERROR_BODY_CHARS = 2_000;

export interface ModelConfig {
  /** Base URL (ending in `/v1` for most services). */
  base: string;
  model: string;
  key?: string;
  /** Milliseconds until the service starts answering. */
  connectTimeoutMs: number;
}

/** What one event of the stream says. */
export type Event =
  | { kind: "delta"; text: string }
  | { kind: "tool"; call: ToolCallPiece }
  | { kind: "finished" }
  | { kind: "done" }
  | { kind: "error"; message: string }
  | { kind: "usage"; prompt: number; completion: number };

/** Where `chat` reports what the service said an answer cost (`usage`); the turn reads it once the answer ended. */
export interface UsageReport {
  tokens?: { prompt: number; completion: number };
}

/** Services (base URL and model) that refused `stream_options`: not asked for usage again. */
const refusedUsage = new Set<string>();

/** Splits a byte stream into lines and lines into events. */
export class SseParser {
  private buffer = "";
  private readonly decoder = new TextDecoder();

  feed(bytes: Uint8Array): Event[] {
    this.buffer += this.decoder.decode(bytes, { stream: true });
    const events: Event[] = [];
    for (;;) {
      const newline = this.buffer.indexOf("\n");
      if (newline < 0) return events;
      const line = this.buffer.slice(0, newline + 1);
      this.buffer = this.buffer.slice(newline + 1);
      events.push(...parseLine(line));
    }
  }

  /** The events of a last line that had no line end. */
  finish(): Event[] {
    const line = this.buffer + this.decoder.decode();
    this.buffer = "";
    return parseLine(line);
  }
}

function parseLine(raw: string): Event[] {
  const line = raw.replace(/[\r\n]+$/, "");
  if (!line.startsWith("data:")) return [];
  const data = line.slice(5).trim();
  if (data === "[DONE]") return [{ kind: "done" }];
  if (data === "") return [];
  try {
    return chunkEvents(JSON.parse(data));
  } catch (e) {
    return [{ kind: "error", message: `unreadable event (${describe(e)}): ${data}` }];
  }
}

/** The events of one JSON chunk. */
export function chunkEvents(chunk: unknown): Event[] {
  const c = chunk as { error?: unknown; choices?: unknown } | null;
  if (c && typeof c === "object" && c.error !== undefined) return [{ kind: "error", message: errorText(c.error) }];
  const choice = Array.isArray(c?.choices) ? (c.choices[0] as Record<string, unknown> | undefined) : undefined;
  if (!choice || typeof choice !== "object") return usageEvent(chunk);
  const events: Event[] = [];
  const part = (choice.delta ?? choice.message) as { content?: unknown; tool_calls?: unknown } | undefined;
  if (part && typeof part.content === "string") events.push({ kind: "delta", text: part.content });
  if (part && Array.isArray(part.tool_calls)) part.tool_calls.forEach((call, position) => events.push(...toolEvent(call, position)));
  if (choice.finish_reason !== undefined && choice.finish_reason !== null) events.push({ kind: "finished" });
  events.push(...usageEvent(chunk));
  return events;
}

/** The chunk's `usage`, when it has one with both counts (src/ai/sse.rs). */
function usageEvent(chunk: unknown): Event[] {
  const usage = (chunk as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null } | null)?.usage;
  const count = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
  if (!usage || typeof usage !== "object" || !count(usage.prompt_tokens) || !count(usage.completion_tokens)) return [];
  return [{ kind: "usage", prompt: usage.prompt_tokens as number, completion: usage.completion_tokens as number }];
}

/** A piece of a tool call (`{index, function: {name?, arguments?}}`), the `position`th of its chunk (src/ai/sse.rs). */
function toolEvent(value: unknown, position: number): Event[] {
  const v = (value ?? {}) as { index?: unknown; function?: { name?: unknown; arguments?: unknown } | null };
  const index = typeof v.index === "number" && Number.isSafeInteger(v.index) && v.index >= 0 ? v.index : position;
  const call: ToolCallPiece = { index };
  const f = v.function;
  if (f && typeof f === "object") {
    if (typeof f.name === "string") call.name = f.name;
    if (typeof f.arguments === "string") call.args = f.arguments;
  }
  return [{ kind: "tool", call }];
}

/** The message of an OpenAI-style error value (`{"message": …}` or text). */
export function errorText(error: unknown): string {
  if (typeof error === "string") return error;
  const m = (error as { message?: unknown } | null)?.message;
  return typeof m === "string" ? m : JSON.stringify(error);
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** A streamed answer: its text in pieces, then its tool calls, in order; ends after the last. */
export type Pieces = AsyncGenerator<string | ToolCall, void, undefined>;

/**
 * Sends the conversation, offering the tools where `offer` says so;
 * resolves once the model started answering, with its pieces (its tool
 * calls last). A refusal of the tool (an HTTP 4xx but
 * 401, 403, 408 and 429) is asked again at once without it where the offer
 * falls back to tags. Given `usage`, the answer's counts are asked for
 * (`stream_options`; a service that refuses it is asked again without, and
 * not asked from then on) and reported there.
 * `signal` ends the request (cancel, timeout).
 */
export async function chat(config: ModelConfig, messages: ChatMessage[], signal: AbortSignal, offer?: ToolOffer, usage?: UsageReport): Promise<Pieces> {
  const url = `${config.base.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (config.key) headers.authorization = `Bearer ${config.key}`;
  const send = (tools: boolean, counts: boolean) => {
    const body = JSON.stringify({
      model: config.model,
      messages,
      stream: true,
      ...(counts && { stream_options: { include_usage: true } }),
      ...(tools && { tools: TOOLS, tool_choice: "auto" }),
    });
    return reach(url, { method: "POST", headers, body, signal }, config.connectTimeoutMs);
  };
  let tools = offer?.offers(config.base, config.model) ?? false;
  const service = `${config.base} ${config.model}`;
  let counts = usage !== undefined && !refusedUsage.has(service);
  let res = await send(tools, counts);
  // A refusal that names `stream_options` is about it, not the tool.
  if (counts && refusesTools(res.status) && /stream_options|include_usage/.test(await res.clone().text().catch(() => ""))) {
    await res.body?.cancel().catch(() => {});
    counts = false;
    res = await send(tools, false);
    if (res.ok) refusedUsage.add(service);
  }
  if (tools && offer?.fallsBack() && refusesTools(res.status)) {
    await res.body?.cancel().catch(() => {});
    tools = false;
    res = await send(false, counts);
    // It refused the tool if the same request without it is answered.
    if (res.ok) offer.refused(config.base, config.model);
  }
  if (counts && refusesTools(res.status)) {
    await res.body?.cancel().catch(() => {});
    res = await send(tools, false);
    if (res.ok) refusedUsage.add(service);
  }
  if (!res.ok) throw await statusError(url, res);
  if ((res.headers.get("content-type") ?? "").startsWith("application/json")) return wholeAnswer(res, usage);
  return streamed(res, usage);
}

/**
 * Whether an answer of `status` to a request with tools may be the service
 * refusing them: a 4xx, but not a key, permission or rate answer, which
 * would be the same without tools.
 */
function refusesTools(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

/** `fetch`, with the connect timeout and the error of a service that does not answer. */
async function reach(url: string, init: RequestInit, connectTimeoutMs: number): Promise<Response> {
  const outer = init.signal;
  // One controller: the connect timer and `outer` (cancel, the answer's
  // timeout) both end the request; after the headers only `outer` does.
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), connectTimeoutMs);
  if (outer?.aborted) ctrl.abort();
  outer?.addEventListener("abort", () => ctrl.abort(), { once: true });
  try {
    return await fetch(url, { ...init, signal: ctrl.signal });
  } catch (e) {
    if (outer?.aborted) throw e;
    const reason = ctrl.signal.aborted ? `timed out (after ${connectTimeoutMs / 1000} s)` : describe(e);
    throw new ModelError(`cannot reach the model at ${url}: ${reason}`);
  } finally {
    clearTimeout(timer);
  }
}

async function statusError(url: string, res: Response): Promise<ModelError> {
  const text = await res.text().catch(() => "");
  let message: string;
  try {
    const value = JSON.parse(text) as unknown;
    const error = (value as { error?: unknown } | null)?.error;
    message = value !== null && typeof value === "object" && error !== undefined ? errorText(error) : JSON.stringify(value);
  } catch {
    message = text.trim();
  }
  message = Array.from(message).slice(0, ERROR_BODY_CHARS).join("");
  if (message === "") message = REASONS[res.status] ?? (res.statusText || "no reason given");
  return new ModelError(`the model's service at ${url} answered ${res.status}: ${message}`);
}

/** A service that ignored `stream: true` and answered in one piece. */
async function* wholeAnswer(res: Response, usage?: UsageReport): Pieces {
  let value: unknown;
  try {
    value = await res.json();
  } catch (e) {
    throw new ModelError(`the model's answer broke off: ${describe(e)}`);
  }
  const calls = new ToolCalls();
  for (const event of chunkEvents(value)) {
    if (event.kind === "delta") yield event.text;
    else if (event.kind === "tool") calls.add(event.call);
    else if (event.kind === "usage" && usage) usage.tokens = { prompt: event.prompt, completion: event.completion };
    else if (event.kind === "error") throw new ModelError(`the model's answer broke off: ${event.message}`);
  }
  yield* calls.list();
}

/** The pieces of a server-sent-events answer; its tool calls, gathered, once it ended. */
async function* streamed(res: Response, usage?: UsageReport): Pieces {
  const calls = new ToolCalls();
  yield* streamedText(res, calls, usage);
  yield* calls.list();
}

/** The text pieces of a server-sent-events answer, its tool calls into `calls`. */
async function* streamedText(res: Response, calls: ToolCalls, usage?: UsageReport): AsyncGenerator<string, void, undefined> {
  if (!res.body) throw new ModelError("the model's answer broke off: the answer has no body");
  const reader = res.body.getReader();
  const parser = new SseParser();
  let finished = false;
  try {
    for (;;) {
      let part: ReadableStreamReadResult<Uint8Array>;
      try {
        part = await reader.read();
      } catch (e) {
        throw new ModelError(`the model's answer broke off: ${describe(e)}`);
      }
      const events = part.done ? parser.finish() : parser.feed(part.value);
      for (const event of events) {
        if (event.kind === "delta" && event.text !== "") yield event.text;
        else if (event.kind === "tool") calls.add(event.call);
        else if (event.kind === "usage" && usage) usage.tokens = { prompt: event.prompt, completion: event.completion };
        else if (event.kind === "finished") finished = true;
        else if (event.kind === "done") return;
        else if (event.kind === "error") throw new ModelError(`the model's answer broke off: ${event.message}`);
      }
      if (part.done) {
        if (finished) return;
        throw new ModelError("the model's answer broke off: the connection closed before the answer ended");
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** The first model a service lists (`/models`), when none is configured. */
export async function discoverModel(base: string, key: string | undefined, signal: AbortSignal): Promise<string | undefined> {
  const url = `${base.replace(/\/+$/, "")}/models`;
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  const res = await reach(url, { headers, signal }, 10_000);
  if (!res.ok) return undefined;
  const list = (await res.json().catch(() => null)) as { data?: { id?: unknown }[] } | null;
  const id = list?.data?.[0]?.id;
  return typeof id === "string" ? id : undefined;
}
