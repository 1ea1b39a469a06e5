// Test support in workerd: requests to the Worker (SELF) as a client sends
// them, a WebSocket client on the room's socket, and the fake model's
// scripts (test/global-setup.mjs).
import { SELF } from "cloudflare:test";
import { expect, inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    standinUrl: string;
    standinToken: string;
    modelUrl: string;
    systemPromptFile: string;
  }
}

export const TOKEN = "test-token";
export const ORIGIN = "http://duet.test";
/** How long a test waits for a frame before failing. */
const WAIT_MS = 30_000;

export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A room id nobody else uses. */
export function room(prefix = "r"): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

export async function call(
  method: string,
  path: string,
  body?: BodyInit | Json,
  headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
): Promise<{ status: number; body: Json; headers: Headers }> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" || body instanceof Uint8Array || body instanceof ReadableStream ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const res = await SELF.fetch(ORIGIN + path, init);
  const text = await res.text();
  let parsed: Json = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export const post = (path: string, body?: Json) => call("POST", path, body);
export const get = (path: string) => call("GET", path);

/** A WebSocket client of a room's socket. */
export class Ws {
  private frames: string[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  /** The close frame's code and reason, once the socket closed. */
  closeCode?: number;
  closeReason?: string;

  constructor(readonly socket: WebSocket) {
    socket.accept();
    socket.addEventListener("message", (e) => {
      this.frames.push(typeof e.data === "string" ? e.data : "<binary>");
      this.wake();
    });
    socket.addEventListener("close", (e) => {
      this.closeCode = e.code;
      this.closeReason = e.reason;
      this.closed = true;
      this.wake();
    });
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next text frame, as text. */
  async nextText(): Promise<string> {
    const deadline = Date.now() + WAIT_MS;
    while (this.frames.length === 0) {
      if (this.closed) throw new Error("the server closed the socket");
      if (Date.now() > deadline) throw new Error("no frame in time");
      await new Promise<void>((ok) => {
        this.waiters.push(ok);
        setTimeout(ok, 500);
      });
    }
    return this.frames.shift() as string;
  }

  async next(): Promise<Json> {
    return JSON.parse(await this.nextText());
  }

  /** Skips frames until one matches. */
  async until(what: (f: Json) => boolean): Promise<Json> {
    for (;;) {
      const f = await this.next();
      if (what(f)) return f;
    }
  }

  untilType(type: string): Promise<Json> {
    return this.until((f) => f.type === type);
  }

  /** Frames already received, without waiting. */
  pending(): Json[] {
    return this.frames.splice(0).map((t) => JSON.parse(t));
  }

  send(frame: Json) {
    this.socket.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** Sends an rpc and waits for its answer (other frames are skipped). */
  async rpc(id: Json, method: string, args: Json): Promise<Json> {
    this.send({ type: "rpc", id, method, args });
    return this.until((f) => f.type === "rpc" && f.id === id);
  }

  /** Waits until the server closed the socket (frames before it are skipped); its code and reason. */
  async closedWith(): Promise<{ code?: number; reason?: string }> {
    const deadline = Date.now() + WAIT_MS;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error("the socket stayed open");
      this.frames.splice(0);
      await new Promise<void>((ok) => {
        this.waiters.push(ok);
        setTimeout(ok, 500);
      });
    }
    return { code: this.closeCode, reason: this.closeReason };
  }

  close() {
    try {
      this.socket.close(1000, "bye");
    } catch {
      // already closed
    }
  }
}

/** Opens a socket: the response (101 or the error) and the client. */
export async function openSocket(path: string, token: string | null = TOKEN): Promise<{ status: number; ws?: Ws; body: string }> {
  const url = new URL(ORIGIN + path);
  if (token !== null) url.searchParams.set("token", token);
  const res = await SELF.fetch(url.toString(), { headers: { Upgrade: "websocket" } });
  if (!res.webSocket) return { status: res.status, body: await res.text() };
  return { status: res.status, ws: new Ws(res.webSocket), body: "" };
}

/** A socket of `room` with `query`, the connect frames not read. */
export async function ws(roomId: string, query = ""): Promise<Ws> {
  const opened = await openSocket(`/api/rooms/${roomId}/ws?${query}`);
  expect(opened.status, opened.body).toBe(101);
  return opened.ws as Ws;
}

/** A socket that has read its four connect frames. */
export async function joined(roomId: string, query = ""): Promise<Ws> {
  const s = await ws(roomId, query);
  for (const type of ["cf_agent_identity", "cf_agent_state", "duet_presence", "duet_you"]) {
    expect((await s.next()).type).toBe(type);
  }
  return s;
}

/** One scripted answer of the fake model. */
export type Script =
  | { kind: "stream"; pieces: string[] }
  | { kind: "paced"; pieces: string[]; ms: number }
  | { kind: "status"; status: number; body: string }
  | { kind: "broken"; pieces: string[] }
  | { kind: "cut"; pieces: string[] }
  | { kind: "hang"; pieces: string[] }
  | { kind: "whole"; text: string }
  /** The pieces of text, then OpenAI tool calls streamed with their arguments' JSON in `args` pieces. */
  | { kind: "tools"; pieces?: string[]; calls: { name: string; args: string[] }[] }
  /** A request that offers tools is refused (400) and the script stays; one without is answered `then`. */
  | { kind: "notools"; then: Script };

/** A reply streamed in pieces of `size` characters. */
export function chunked(text: string, size: number): Script {
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(""));
  return { kind: "stream", pieces };
}

/** Registers the model's answers to questions that mention `[[key]]`; returns the marker. */
export async function script(key: string, scripts: Script[]): Promise<string> {
  const res = await fetch(`${inject("modelUrl")}/control/scripts`, {
    method: "POST",
    body: JSON.stringify({ key, scripts }),
  });
  expect(res.status).toBe(200);
  return `[[${key}]]`;
}

/** The chat requests the fake model got for `key`. */
export async function modelRequests(key: string): Promise<{ headers: Record<string, string>; body: Json }[]> {
  const res = await fetch(`${inject("modelUrl")}/control/requests/${key}`);
  return res.json();
}

/** A short label of a frame, to check their order. */
export function label(f: Json): string {
  switch (f.type) {
    case "cf_agent_state":
      return `state${f.state.messages.length}`;
    case "duet_ai":
      return `ai:${f.phase}`;
    case "duet_exec":
      return `exec:${f.phase}`;
    default:
      return f.type;
  }
}

/** Reads one command's frames (start, output, complete). */
export async function execFrames(s: Ws): Promise<{ start: Json; out: string; err: string; complete: Json }> {
  const start = await s.until((f) => f.type === "duet_exec" && f.phase === "start");
  let out = "";
  let err = "";
  for (;;) {
    const f = await s.until((x) => x.type === "duet_exec" && x.execId === start.execId);
    if (f.phase === "stdout") out += f.data;
    else if (f.phase === "stderr") err += f.data;
    else if (f.phase === "complete") return { start, out, err, complete: f };
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((ok) => setTimeout(ok, ms));
}
