// The local stand-in for the Cloudflare Sandbox (no Docker here): a Durable
// Object with the SDK methods the adapter calls, reached through the real
// `getSandbox`, that forwards each to a `duet serve` on loopback
// (DUET_STANDIN_URL, behind its own token DUET_STANDIN_TOKEN), whose room
// named after this sandbox is the real namespace sandbox.
//
// It also behaves as SDK 0.12.10 does where Duet depends on it:
// - after `sleepAfter` without a call, the container "sleeps": it backs the
//   workspace up (src/sandbox/backup.ts, as the production class does),
//   then wipes files and processes (duet serve's cleanup); the next call
//   "starts a container" and restores the backup;
// - while a "container" starts (DUET_STANDIN_START_SECS, default 0) calls
//   fail as the SDK's do, CONTAINER_UNAVAILABLE with a retry delay;
// - `killProcess` ignores its signal (it always ends the command);
// - background processes are the adapter's (src/sandbox/signal.ts): its
//   process wrapper is duet serve's process (`POST /processes`), its log
//   stream (`streamProcessLogs`) that process followed over the socket
//   (`process_follow`), a group signal its kill (`DELETE`: SIGTERM, SIGKILL
//   2 s later); its `kill` of a command is duet serve's interrupt;
// - a session's exec (`execWithSessionToken`) runs beside the room's
//   shell, as the SDK's does in a session of its own: duet serve's
//   background process, asked after until it ended;
// - the container's ports are duet serve's: the kernel's TCP table that
//   a session's exec (`execWithSessionToken`) of PORTS_COMMAND reads is made from `GET /ports`,
//   `containerFetch(request, port)` is the request as it is over its
//   `/tunnel/{port}` (dev/http1.ts), so is `wsConnect` (a
//   `fetch` with the target port header: the handshake, then frames), and
//   the production class's tunnel (TUNNEL_PATH) is that tunnel relayed;
//   none of them wakes a sleeping container;
// - a session's `terminal()` (the SDK's proxyTerminal, a WebSocket upgrade
//   of `fetch` to /ws/pty) is duet serve's shared terminal, attached over a
//   socket of its own and translated to the SDK's PTY protocol
//   (src/sandbox/pty.ts); deleteSession closes it (term_close);
// and where the production class (adapter.ts) adds to the SDK: the label
// `duet-room` names its room, which it tells when its container sleeps.

import { DurableObject } from "cloudflare:workers";
import { fromBase64, toBase64 } from "../src/sandbox/bytes";
import type { Env } from "../src/env";
import { ROOM_LABEL, tellSandboxStopped } from "../src/rooms";
import { WorkspacePersistence, archiveWorkspace, copyPrefix, unpackWorkspace, type WorkspaceHost } from "../src/sandbox/backup";
import { GROUP_SIGNAL_COMMAND, PORTS_COMMAND, SIGNAL_COMMAND, parseProcessCommand, tcpTable } from "../src/sandbox/signal";
import { http1, socketStream, websocket1 } from "./http1";
import { TUNNEL_PATH, tunnelOverWebSocket } from "../src/sandbox/tunnel";

interface Configuration {
  sandboxName?: { name: string };
  sleepAfter?: string | number;
  labels?: Record<string, string>;
}

interface StreamOptions {
  timeout?: number;
  cwd?: string;
  env?: Record<string, string>;
}

/** The SDK's ExecResult. */
interface ExecResult {
  success: boolean;
  exitCode: number;
  stdout: string;
  stderr: string;
  command: string;
  duration: number;
  timestamp: string;
}

/** A session of createSession: its terminal on duet serve, once `terminal()` opened it. */
interface Session {
  termId?: string;
  /** The socket to duet serve that holds the terminal. */
  socket?: WebSocket;
}

/** One command this stand-in runs, by the pid it reported. */
interface Command {
  execId?: string;
  done: boolean;
}

/** The SDK's FileInfo (listFiles). */
interface FileInfo {
  name: string;
  absolutePath: string;
  relativePath: string;
  type: "file" | "directory" | "symlink" | "other";
  size: number;
  modifiedAt: string;
  mode: string;
  permissions: { readable: boolean; writable: boolean; executable: boolean };
}

/** A backup's `meta.json`: the SDK's fields, and the parts of the stand-in's archive. */
interface BackupMeta {
  id: string;
  dir: string;
  name: string | null;
  sizeBytes: number;
  ttl: number;
  createdAt: string;
  parts: string[];
}

/** The SDK's default lifetime of a backup (3 days). */
const BACKUP_DEFAULT_TTL_SECS = 259_200;

const DEFAULT_SLEEP_AFTER_MS = 600_000;
/** The longest pause between two looks at a command run beside the shell. */
const BESIDE_POLL_MS = 100;
/**
 * At most this many commands run beside the shell at once: duet serve keeps
 * only its last 20 ended processes, and each is asked after once it ended.
 */
const BESIDE_AT_ONCE = 8;
/** A command's timeout when the caller gives none (duet serve caps it). */
const LONGEST_MS = 3_600_000;

export class SandboxStandIn extends DurableObject<Env> implements WorkspaceHost {
  private name: string | null = null;
  /** The room this sandbox is of (the `duet-room` label). */
  private roomId?: string;
  private sleepAfterMs = DEFAULT_SLEEP_AFTER_MS;
  /** Whether a "container" runs (its workspace restored); kept in storage. */
  private awake = false;
  /** Open command streams: the container is not idle while one runs. */
  private busy = 0;
  private nextPid = 1000;
  private readonly commands = new Map<number, Command>();
  /** Commands running beside the shell, and those waiting for a turn. */
  private besideRunning = 0;
  private readonly besideWaiting: Array<() => void> = [];
  /** One socket to duet serve's room, shared by the commands (opened on first use). */
  private socketOpen?: Promise<WebSocket>;
  /** The running commands' frame handlers; null when the socket closed. */
  private readonly listeners = new Set<(frame: Record<string, any> | null) => void>();
  private persistence?: WorkspacePersistence;
  private readonly sessions = new Map<string, Session>();
  /** The adapter's process ids, to duet serve's. */
  private readonly processes = new Map<string, string>();
  /** The exit codes of duet serve's processes that ended, as the shared socket saw them. */
  private readonly exits = new Map<string, number | null>();
  /** When the starting "container" is ready (0: not starting). */
  private startingUntil = 0;
  /** Seconds a container takes to start (DUET_STANDIN_START_SECS; tests may set it). */
  startSecs: number;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startSecs = Number(env.DUET_STANDIN_START_SECS ?? 0) || 0;
    // getSandbox configures once per isolate; workerd evicts idle objects.
    ctx.blockConcurrencyWhile(async () => {
      this.name = (await ctx.storage.get<string>("name")) ?? null;
      this.roomId = await ctx.storage.get<string>("room");
      this.sleepAfterMs = (await ctx.storage.get<number>("sleepAfterMs")) ?? DEFAULT_SLEEP_AFTER_MS;
      this.awake = (await ctx.storage.get<boolean>("awake")) ?? false;
    });
  }

  // ---- configuration (SDK: configure via getSandbox) ----

  async configure(configuration: Configuration): Promise<void> {
    const name = configuration.sandboxName?.name;
    if (name && name !== this.name) {
      this.name = name;
      await this.ctx.storage.put("name", name);
    }
    if (configuration.sleepAfter !== undefined) {
      this.sleepAfterMs = parseDuration(configuration.sleepAfter);
      await this.ctx.storage.put("sleepAfterMs", this.sleepAfterMs);
    }
    const room = configuration.labels?.[ROOM_LABEL];
    if (room && room !== this.roomId) {
      this.roomId = room;
      await this.ctx.storage.put("room", room);
    }
  }

  // ---- commands ----

  /** SDK execStream: an SSE stream of start/stdout/stderr/complete/error events. */
  async execStream(command: string, options: StreamOptions = {}): Promise<ReadableStream<Uint8Array>> {
    await this.wake();
    // Each command's frames are told apart by the name that ran it.
    const user = `standin-${crypto.randomUUID().slice(0, 8)}`;
    const ws = await this.sharedSocket();
    const encoder = new TextEncoder();
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let finished = false;
    let pid: number | undefined;
    const emit = (event: Record<string, unknown>) => {
      if (finished) return;
      const full = { timestamp: new Date().toISOString(), ...event };
      controller.enqueue(encoder.encode(`data: ${JSON.stringify(full)}\n\n`));
    };
    const finish = () => {
      if (finished) return;
      finished = true;
      this.busy -= 1;
      if (pid !== undefined) this.commands.delete(pid);
      this.listeners.delete(listen);
      void this.touch();
      controller.close();
    };
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      cancel: () => finish(),
    });
    this.busy += 1;
    const entry: Command = { done: false };
    const listen = (frame: Record<string, any> | null) => {
      if (!frame) {
        emit({ type: "error", error: "the stand-in lost its connection to duet serve" });
        finish();
      } else if (frame.type === "duet_exec") {
        if (frame.phase === "start" && entry.execId === undefined && frame.by === user) {
          entry.execId = String(frame.execId);
          pid = this.nextPid++;
          this.commands.set(pid, entry);
          emit({ type: "start", command, pid });
        } else if (frame.execId === entry.execId) {
          if (frame.phase === "stdout" || frame.phase === "stderr") {
            emit({ type: frame.phase, data: frame.data });
          } else if (frame.phase === "complete") {
            entry.done = true;
            const exitCode = typeof frame.exitCode === "number" ? frame.exitCode : undefined;
            emit({ type: "complete", exitCode, error: frame.error });
            finish();
          }
        }
      } else if (frame.type === "rpc" && frame.id === user) {
        if (!frame.success) emit({ type: "error", error: rpcError(frame) });
        finish();
      }
    };
    this.listeners.add(listen);
    const args = {
      cmd: command,
      timeoutMs: options.timeout ?? LONGEST_MS,
      cwd: options.cwd,
      env: options.env,
      userId: user,
    };
    ws.send(JSON.stringify({ type: "rpc", id: user, method: "exec", args: [args] }));
    return stream;
  }

  /** SDK exec (no streaming): the whole result. */
  async exec(command: string, options: StreamOptions = {}): Promise<ExecResult> {
    await this.wake();
    return this.run(command, options);
  }

  /** SDK startProcess: the adapter's process wrapper, a signal to one, or its `kill` of a command. */
  async startProcess(
    command: string,
    options: { processId?: string } = {},
  ): Promise<{ id: string; pid: number; command: string; status: string; startTime: Date }> {
    await this.wake();
    const done = (id: string) => ({ id, pid: 0, command, status: "completed", startTime: new Date() });
    const wrapped = parseProcessCommand(command);
    if (wrapped) {
      const [id, cmd] = wrapped;
      // Open before it starts: its exit frame may come before anyone follows it.
      await this.sharedSocket();
      const res = await this.call("POST", "/processes", JSON.stringify({ cmd }));
      if (!res.ok) throw new Error(await httpError(res));
      const { process } = (await res.json()) as { process: { id: string } };
      this.processes.set(options.processId ?? id, process.id);
      return { ...done(options.processId ?? id), status: "running" };
    }
    const group = GROUP_SIGNAL_COMMAND.exec(command);
    if (group) {
      const target = this.processes.get(group[2]);
      // duet serve's kill is SIGTERM, then SIGKILL 2 s later: the adapter's KILL has been sent already.
      if (target !== undefined && group[1] === "TERM") {
        void this.call("DELETE", `/processes/${target}`).then(
          (res) => res.body?.cancel(),
          (e) => console.error(`the stand-in's kill of ${target} failed: ${String(e)}`),
        );
      }
      return done(`signal-${Date.now()}`);
    }
    const match = SIGNAL_COMMAND.exec(command);
    if (!match) throw new Error(`the stand-in runs no such background process: ${JSON.stringify(command)}`);
    // duet serve's interrupt is SIGINT, then SIGKILL 2 s later.
    await this.interruptPid(Number(match[2]));
    return done(`kill-${Date.now()}`);
  }

  /**
   * SDK streamProcessLogs: SSE `stdout`/`stderr` events (the log so far
   * first), then `exit {exitCode}`: duet serve's process followed over the
   * shared socket. The container is busy (awake) while it streams.
   */
  async streamProcessLogs(processId: string): Promise<ReadableStream<Uint8Array>> {
    const target = this.processes.get(processId);
    if (target === undefined) throw new Error(`PROCESS_NOT_FOUND: no process ${processId}`);
    const ws = await this.sharedSocket();
    const encoder = new TextEncoder();
    const rpcId = `follow-${crypto.randomUUID().slice(0, 8)}`;
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let answered = false;
    let finished = false;
    let exit: { exitCode?: number } | undefined;
    const emit = (type: string, fields: Record<string, unknown>) => {
      if (finished) return;
      const event = { type, timestamp: new Date().toISOString(), processId, data: "", ...fields };
      controller.enqueue(encoder.encode(`data: ${JSON.stringify(event)}\n\n`));
    };
    const finish = () => {
      if (finished) return;
      if (exit) emit("exit", exit);
      finished = true;
      this.busy -= 1;
      this.listeners.delete(listen);
      void this.touch();
      controller.close();
    };
    const listen = (frame: Record<string, any> | null) => {
      if (!frame) {
        emit("error", { data: "the stand-in lost its connection to duet serve" });
        return finish();
      }
      if (frame.type === "rpc" && frame.id === rpcId) {
        if (!frame.success) {
          emit("error", { data: rpcError(frame) });
          return finish();
        }
        answered = true;
        if (frame.result.stdout) emit("stdout", { data: frame.result.stdout });
        if (frame.result.stderr) emit("stderr", { data: frame.result.stderr });
        // Ended before the follow: the log is whole, and its exit frame came already.
        const ended = this.exits.get(target);
        if (ended !== undefined) exit = ended === null ? {} : { exitCode: ended };
        if (exit) return finish();
      } else if (frame.type === "duet_process" && frame.processId === target) {
        // Output before the answer is in the answer's log already (this
        // socket followed the process before): only what comes after it.
        if (frame.phase === "stdout" || frame.phase === "stderr") {
          if (answered) emit(frame.phase, { data: frame.data });
        }
        else if (frame.phase === "exit") {
          exit = frame.exitCode === null ? {} : { exitCode: frame.exitCode };
          if (answered) finish();
        }
      }
    };
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      cancel: () => finish(),
    });
    this.busy += 1;
    this.listeners.add(listen);
    ws.send(JSON.stringify({ type: "rpc", id: rpcId, method: "process_follow", args: [{ processId: target }] }));
    return stream;
  }

  /** SDK killProcess: like 0.12.10, the signal is ignored; the command is ended. */
  async killProcess(id: string, _signal?: string): Promise<void> {
    await this.interruptPid(Number(id));
  }

  // ---- sessions and their terminal ----

  /** SDK createSession: only the id matters here (the SDK wraps it with `terminal()`). */
  async createSession(options: { id?: string } = {}): Promise<{ id: string }> {
    await this.wake();
    const id = options.id ?? `session-${Date.now()}`;
    if (!this.sessions.has(id)) this.sessions.set(id, {});
    return { id };
  }

  /**
   * SDK execWithSessionToken: exec in a session of its own, so never behind
   * a command that keeps the room's shell busy (PORTS_COMMAND never wakes
   * the container).
   */
  async execWithSessionToken(command: string, _sessionId: string, _options: StreamOptions = {}): Promise<ExecResult> {
    if (command !== PORTS_COMMAND) return this.runBeside(command);
    const started = Date.now();
    let table = "";
    if (this.awake) {
      // A look is activity, as any call to a real container is.
      await this.touch();
      const res = await this.call("GET", "/ports");
      if (!res.ok) throw new Error(await httpError(res));
      const { ports } = (await res.json()) as { ports: { port: number }[] };
      table = tcpTable(ports.map((p) => p.port));
    }
    return { success: true, exitCode: 0, stdout: table, stderr: "", command, duration: Date.now() - started, timestamp: new Date(started).toISOString() };
  }

  /** Container getState: whether the "container" runs. */
  async getState(): Promise<{ status: "healthy" | "stopped"; lastChange: number }> {
    return { status: this.awake ? "healthy" : "stopped", lastChange: (await this.ctx.storage.get<number>("lastActivity")) ?? 0 };
  }

  /**
   * SDK containerFetch(request, port): the request as it is, over duet
   * serve's tunnel to that port (its preview would set its own Host and
   * X-Forwarded-* headers); its 502 when nothing listens.
   */
  async containerFetch(request: Request, port: number): Promise<Response> {
    const tunnel = await this.tunnelSocket(port);
    if (tunnel instanceof Response) return tunnel;
    try {
      return await http1(request, socketStream(tunnel));
    } catch (e) {
      closeQuietly(tunnel);
      throw e;
    }
  }

  /**
   * wsConnect(request, port): the app's WebSocket, its handshake sent as
   * the worker made it over duet serve's tunnel (dev/http1.ts).
   */
  private async portWebSocket(request: Request, port: number): Promise<Response> {
    const headers = new Headers(request.headers);
    headers.delete("cf-container-target-port");
    const tunnel = await this.tunnelSocket(port);
    if (tunnel instanceof Response) return tunnel;
    try {
      return await websocket1(new Request(request.url, { headers }), socketStream(tunnel));
    } catch (e) {
      closeQuietly(tunnel);
      throw e;
    }
  }

  /** duet serve's tunnel to `port` (accepted; the container busy while it is open), or the answer refusing it. */
  private async tunnelSocket(port: number): Promise<WebSocket | Response> {
    if (!this.awake) return nothingListens(port);
    await this.touch();
    const res = await fetch(`${this.base()}/api/rooms/${this.room()}/tunnel/${port}`, {
      headers: { upgrade: "websocket", authorization: `Bearer ${this.env.DUET_STANDIN_TOKEN ?? ""}` },
    });
    const ws = res.webSocket;
    if (!ws) return res.status === 502 ? nothingListens(port) : new Response(await res.text(), { status: res.status });
    ws.accept();
    this.busy += 1;
    let counted = true;
    const done = () => {
      if (!counted) return;
      counted = false;
      this.busy -= 1;
      void this.touch();
    };
    ws.addEventListener("close", done);
    ws.addEventListener("error", done);
    return ws;
  }

  /** The production class's tunnel (TUNNEL_PATH): duet serve's, relayed at `rate`. */
  private async portTunnel(port: number, rate: number): Promise<Response> {
    const tunnel = await this.tunnelSocket(port);
    return tunnel instanceof Response ? tunnel : tunnelOverWebSocket(tunnel, rate, () => {});
  }

  /** SDK deleteSession: its terminal ends (term_close on duet serve, over a socket of its own: the terminal's may be gone). */
  async deleteSession(sessionId: string): Promise<{ success: boolean; sessionId: string; timestamp: string }> {
    const session = this.sessions.get(sessionId);
    this.sessions.delete(sessionId);
    if (session?.termId !== undefined) {
      const ws = await this.socket("standin-terminal");
      try {
        const res = await this.socketRpc(ws, "term_close", { termId: session.termId });
        // 404: it had ended already.
        if (!res.success && res.status !== 404) throw new Error(`duet serve's term_close failed: ${rpcError(res)}`);
      } finally {
        closeQuietly(ws);
        if (session.socket) closeQuietly(session.socket);
      }
    }
    return { success: true, sessionId, timestamp: new Date().toISOString() };
  }

  /**
   * The container as the SDK reaches it: the PTY socket (`/ws/pty`) of
   * port 3000, a port's WebSocket (wsConnect: the target port header), and
   * the production class's tunnel (TUNNEL_PATH).
   */
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const target = Number(request.headers.get("cf-container-target-port"));
    if (target > 0 && target !== 3000) return this.portWebSocket(request, target);
    if (url.pathname.startsWith(TUNNEL_PATH)) {
      const port = Number(url.pathname.slice(TUNNEL_PATH.length));
      const rate = Number(url.searchParams.get("rate")) || Number.POSITIVE_INFINITY;
      return this.portTunnel(port, rate);
    }
    if (url.pathname !== "/ws/pty" || request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return new Response("the stand-in serves only /ws/pty", { status: 404 });
    }
    await this.wake();
    const sessionId = url.searchParams.get("sessionId") ?? "";
    const session = this.sessions.get(sessionId);
    if (!session) return new Response(`no session ${sessionId}`, { status: 404 });
    const size = (name: string) => Number(url.searchParams.get(name)) || undefined;
    const cols = size("cols");
    const rows = size("rows");
    const upstream = await this.socket("standin-terminal");
    const opened = await this.socketRpc(upstream, "term_open", cols && rows ? { cols, rows } : {});
    const [client, pty] = Object.values(new WebSocketPair());
    pty.accept();
    // Binary frames as bytes, not Blobs (the default of newer compatibility dates).
    pty.binaryType = "arraybuffer";
    if (!opened.success) {
      closeQuietly(upstream);
      // A container that is starting fails the call, as the SDK's does; any other failure is the PTY's error status.
      if (opened.status === 503) throw new Error(rpcError(opened));
      pty.send(JSON.stringify({ type: "error", message: rpcError(opened) }));
      pty.close(1011, "the terminal could not start");
      return new Response(null, { status: 101, webSocket: client });
    }
    const termId = String(opened.result.termId);
    session.termId = termId;
    session.socket = upstream;
    this.busy += 1;
    let over = false;
    const end = () => {
      if (over) return;
      over = true;
      this.busy -= 1;
      void this.touch();
      closeQuietly(pty);
      closeQuietly(upstream);
    };
    upstream.addEventListener("message", (m) => {
      const frame = parseFrame(m.data);
      if (frame?.type !== "duet_term" || frame.termId !== termId) return;
      try {
        if (frame.phase === "data") pty.send(fromBase64(String(frame.data)));
        else if (frame.phase === "exit") pty.send(JSON.stringify({ type: "exit", code: frame.exitCode }));
      } catch {
        // The client went: end() follows.
      }
      if (frame.phase === "exit") end();
    });
    pty.addEventListener("message", (m) => {
      if (over) return;
      if (typeof m.data !== "string") {
        upstream.send(JSON.stringify({ type: "duet_term_input", termId, data: toBase64(new Uint8Array(m.data as ArrayBuffer)) }));
        return;
      }
      const control = parseFrame(m.data);
      if (control?.type === "resize") {
        upstream.send(JSON.stringify({ type: "duet_term_resize", termId, cols: control.cols, rows: control.rows }));
      }
    });
    // A client that goes only detaches, as from the SDK's PTY (it runs on until deleteSession).
    for (const ws of [pty, upstream]) {
      ws.addEventListener("close", end);
      ws.addEventListener("error", end);
    }
    pty.send(JSON.stringify({ type: "ready" }));
    return new Response(null, { status: 101, webSocket: client });
  }

  /** An rpc over `ws` to duet serve, and its answer frame. */
  private socketRpc(ws: WebSocket, method: string, args: object): Promise<Record<string, any>> {
    const id = `${method}-${crypto.randomUUID().slice(0, 8)}`;
    return new Promise((resolve) => {
      const listen = (m: MessageEvent) => {
        const frame = parseFrame(m.data);
        if (frame?.type !== "rpc" || frame.id !== id) return;
        ws.removeEventListener("message", listen);
        resolve(frame);
      };
      ws.addEventListener("message", listen);
      ws.addEventListener("close", () => resolve({ success: false, error: "the socket to duet serve closed" }));
      try {
        ws.send(JSON.stringify({ type: "rpc", id, method, args: [args] }));
      } catch (e) {
        resolve({ success: false, error: `the socket to duet serve is closed: ${String(e)}` });
      }
    });
  }

  // ---- files (paths under /workspace only, as duet serve's files API) ----

  async readFile(
    path: string,
    _options?: { encoding?: string },
  ): Promise<{ success: true; path: string; content: string; encoding: "base64"; timestamp: string }> {
    await this.wake();
    const res = await this.call("GET", `/files/${filePath(path)}`);
    if (!res.ok) throw await fileError(res, path);
    const content = toBase64(new Uint8Array(await res.arrayBuffer()));
    return { success: true, path, content, encoding: "base64", timestamp: new Date().toISOString() };
  }

  /**
   * SDK readFileStream: its Server-Sent Events (`metadata`, a `chunk` per
   * piece as duet serve's `GET /files/{path}` streams it, base64 as the
   * SDK sends a binary file's, then `complete`), never the file whole.
   */
  async readFileStream(path: string): Promise<ReadableStream<Uint8Array>> {
    await this.wake();
    const res = await this.call("GET", `/files/${filePath(path)}`);
    if (!res.ok || !res.body) throw await fileError(res, path);
    const size = Number(res.headers.get("content-length") ?? "0");
    const source = res.body.getReader();
    const encoder = new TextEncoder();
    const event = (e: object) => encoder.encode(`data: ${JSON.stringify(e)}\n\n`);
    let bytesRead = 0;
    return new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(event({ type: "metadata", mimeType: "application/octet-stream", size, isBinary: true, encoding: "base64" }));
      },
      async pull(controller) {
        try {
          const next = await source.read();
          if (next.done) {
            controller.enqueue(event({ type: "complete", bytesRead }));
            controller.close();
            return;
          }
          bytesRead += next.value.byteLength;
          controller.enqueue(event({ type: "chunk", data: toBase64(next.value) }));
        } catch (e) {
          controller.enqueue(event({ type: "error", error: String(e) }));
          controller.close();
        }
      },
      async cancel() {
        await source.cancel();
      },
    });
  }

  async writeFile(
    path: string,
    content: string,
    options: { encoding?: string } = {},
  ): Promise<{ success: true; path: string; timestamp: string }> {
    await this.wake();
    const bytes = options.encoding === "base64" ? fromBase64(content) : new TextEncoder().encode(content);
    const res = await this.call("PUT", `/files/${filePath(path)}`, bytes);
    if (!res.ok) throw await fileError(res, path);
    return { success: true, path, timestamp: new Date().toISOString() };
  }

  /** SDK listFiles (of a folder, hidden entries included): duet serve's `GET /files/{dir}/`. */
  async listFiles(path: string, _options?: { includeHidden?: boolean }): Promise<{ success: true; path: string; files: FileInfo[]; count: number; timestamp: string }> {
    await this.wake();
    const dir = path === "/workspace" ? "" : `${filePath(path)}/`;
    const res = await this.call("GET", `/files/${dir}`);
    if (!res.ok) throw await fileError(res, path);
    const { entries } = (await res.json()) as { entries: { name: string; type: string; size: number; mtime: number }[] };
    const files = entries.map((e) => ({
      name: e.name,
      absolutePath: `${path.replace(/\/$/, "")}/${e.name}`,
      relativePath: e.name,
      type: (e.type === "dir" ? "directory" : e.type) as FileInfo["type"],
      size: e.size,
      modifiedAt: new Date(e.mtime).toISOString(),
      mode: "",
      permissions: { readable: true, writable: true, executable: false },
    }));
    return { success: true, path, files, count: files.length, timestamp: new Date().toISOString() };
  }

  /** SDK deleteFile: duet serve's `DELETE /files/{path}` (which takes folders too). */
  async deleteFile(path: string): Promise<{ success: true; path: string; timestamp: string }> {
    await this.wake();
    const res = await this.call("DELETE", `/files/${filePath(path)}`);
    if (!res.ok) throw await fileError(res, path);
    await res.body?.cancel();
    return { success: true, path, timestamp: new Date().toISOString() };
  }

  // ---- backups (SDK createBackup/restoreBackup; checkpoints) ----

  /**
   * SDK createBackup of /workspace: a tar of duet serve's room through its
   * exec (src/sandbox/backup.ts), into BACKUP_BUCKET under the SDK's
   * `backups/{id}/` with a `meta.json` as the SDK writes one.
   */
  async createBackup(options: { dir: string; name?: string; ttl?: number; excludes?: string[] }): Promise<{ id: string; dir: string; localBucket: true }> {
    if (options.dir !== "/workspace") throw new Error(`INVALID_BACKUP_CONFIG: the stand-in backs up /workspace only, not ${options.dir}`);
    const ttl = options.ttl ?? BACKUP_DEFAULT_TTL_SECS;
    if (!(ttl > 0)) throw new Error("INVALID_BACKUP_CONFIG: BackupOptions.ttl must be a positive number of seconds");
    await this.wake();
    const id = crypto.randomUUID();
    const bucket = this.env.BACKUP_BUCKET;
    const prefix = copyPrefix(id);
    try {
      const parts = await archiveWorkspace(this.host(), bucket, prefix);
      let sizeBytes = 0;
      for (const part of parts) sizeBytes += (await bucket.head(`${prefix}${part}`))?.size ?? 0;
      const meta: BackupMeta = { id, dir: options.dir, name: options.name ?? null, sizeBytes, ttl, createdAt: new Date().toISOString(), parts };
      await bucket.put(`${prefix}meta.json`, JSON.stringify(meta));
    } catch (e) {
      const objects = await bucket.list({ prefix }).catch(() => undefined);
      if (objects && objects.objects.length > 0) await bucket.delete(objects.objects.map((o) => o.key)).catch(() => undefined);
      throw new Error(`BACKUP_CREATE_FAILED: ${e instanceof Error ? e.message : String(e)}`);
    }
    return { id, dir: options.dir, localBucket: true };
  }

  /** SDK restoreBackup: the archive unpacked into its folder (over what is there, as the SDK's local mode does). */
  async restoreBackup(backup: { id: string; dir: string }): Promise<{ success: true; dir: string; id: string }> {
    const bucket = this.env.BACKUP_BUCKET;
    const prefix = copyPrefix(backup.id);
    const object = await bucket.get(`${prefix}meta.json`);
    if (!object) throw new Error(`BACKUP_NOT_FOUND: Backup not found: ${backup.id}`);
    const meta = (await object.json()) as BackupMeta;
    // The SDK refuses a backup within a minute of its expiry.
    if (Date.now() + 60_000 > new Date(meta.createdAt).getTime() + meta.ttl * 1000) {
      throw new Error(`BACKUP_EXPIRED: Backup ${backup.id} has expired`);
    }
    if (backup.dir !== "/workspace") throw new Error(`INVALID_BACKUP_CONFIG: the stand-in restores into /workspace only, not ${backup.dir}`);
    await this.wake();
    await unpackWorkspace(this.host(), bucket, prefix, meta.parts);
    return { success: true, dir: backup.dir, id: backup.id };
  }

  /** SDK mkdir: duet serve's PUT makes parent folders itself. */
  async mkdir(path: string, _options?: { recursive?: boolean }): Promise<{ success: true; path: string }> {
    filePath(path);
    return { success: true, path };
  }

  // ---- lifecycle ----

  /** SDK destroy: processes and files gone; the next call starts afresh. */
  async destroy(): Promise<void> {
    await this.wipe();
    await this.ctx.storage.deleteAlarm();
  }

  /** The idle timer: sleep as the SDK does, after a backup. */
  async alarm(): Promise<void> {
    if (!this.awake) return;
    const last = (await this.ctx.storage.get<number>("lastActivity")) ?? 0;
    const due = last + this.sleepAfterMs;
    if (this.busy > 0 || Date.now() < due) {
      await this.ctx.storage.setAlarm(Math.max(due, Date.now() + 1000));
      return;
    }
    if (await this.workspace().backup(this.host())) {
      await this.wipe();
      await tellSandboxStopped(this.env, this.roomId);
    } else {
      // Nothing is lost: stay awake and try again later.
      await this.ctx.storage.setAlarm(Date.now() + this.sleepAfterMs);
    }
  }

  // ---- internals ----

  private workspace(): WorkspacePersistence {
    this.persistence ??= new WorkspacePersistence(this.env.WORKSPACES, this.ctx.id.toString());
    return this.persistence;
  }

  /** The SDK methods without wake(), for the backup and the restore. */
  private host(): WorkspaceHost {
    return {
      exec: (cmd) => this.run(cmd, {}),
      readFile: async (path) => {
        const res = await this.call("GET", `/files/${filePath(path)}`);
        if (!res.ok) throw await fileError(res, path);
        return { content: toBase64(new Uint8Array(await res.arrayBuffer())) };
      },
      writeFile: async (path, content) => {
        const res = await this.call("PUT", `/files/${filePath(path)}`, fromBase64(content));
        if (!res.ok) throw await fileError(res, path);
      },
    };
  }

  /** A "container start": the workspace comes back from R2. */
  private async wake(): Promise<void> {
    if (!this.awake && this.startSecs > 0) {
      const now = Date.now();
      if (this.startingUntil === 0) this.startingUntil = now + this.startSecs * 1000;
      if (now < this.startingUntil) {
        const left = Math.ceil((this.startingUntil - now) / 1000);
        throw new Error(`CONTAINER_UNAVAILABLE: container is starting, retry after ${left}`);
      }
    }
    this.startingUntil = 0;
    if (!this.awake) {
      await this.ctx.blockConcurrencyWhile(async () => {
        if (this.awake) return;
        await this.workspace().restore(this.host());
        this.awake = true;
        await this.ctx.storage.put("awake", true);
      });
    }
    await this.touch();
  }

  /** Activity: the sleep timer starts again. */
  private async touch(): Promise<void> {
    const now = Date.now();
    await this.ctx.storage.put("lastActivity", now);
    await this.ctx.storage.setAlarm(now + this.sleepAfterMs);
  }

  /** The container is gone: files, processes and the shell. */
  private async wipe(): Promise<void> {
    const res = await this.call("POST", "/cleanup", "{}");
    if (!res.ok && res.status !== 207) throw new Error(`duet serve's cleanup answered ${res.status}: ${await res.text()}`);
    this.commands.clear();
    this.sessions.clear();
    this.processes.clear();
    this.exits.clear();
    this.awake = false;
    await this.ctx.storage.put("awake", false);
  }

  private async run(command: string, options: StreamOptions): Promise<ExecResult> {
    const started = Date.now();
    const body = { cmd: command, timeoutMs: options.timeout ?? LONGEST_MS, cwd: options.cwd, env: options.env };
    const res = await this.call("POST", "/sandbox/exec", JSON.stringify(body));
    if (!res.ok) throw new Error(await httpError(res));
    const { result } = (await res.json()) as { result: { exitCode: number | null; stdout: string; stderr: string } };
    const exitCode = result.exitCode ?? -1;
    return {
      success: exitCode === 0,
      exitCode,
      stdout: result.stdout,
      stderr: result.stderr,
      command,
      duration: Date.now() - started,
      timestamp: new Date(started).toISOString(),
    };
  }

  /**
   * `command` beside the room's shell: duet serve's background process
   * (a `/sandbox/exec` would wait until the shell's running command ends),
   * asked after until it ended, then its log read. Over HTTP only: an open
   * socket would keep this object from being evicted.
   */
  private async runBeside(command: string): Promise<ExecResult> {
    while (this.besideRunning >= BESIDE_AT_ONCE) await new Promise<void>((turn) => this.besideWaiting.push(turn));
    this.besideRunning++;
    try {
      return await this.runBesideNow(command);
    } finally {
      this.besideRunning--;
      this.besideWaiting.shift()?.();
    }
  }

  /** `runBeside` once its turn came. */
  private async runBesideNow(command: string): Promise<ExecResult> {
    await this.wake();
    const started = Date.now();
    const res = await this.call("POST", "/processes", JSON.stringify({ cmd: command }));
    if (!res.ok) throw new Error(await httpError(res));
    const { process } = (await res.json()) as { process: { id: string } };
    const path = `/processes/${encodeURIComponent(process.id)}`;
    let exitCode = -1;
    for (let pause = 5; ; pause = Math.min(pause * 2, BESIDE_POLL_MS)) {
      const asked = await this.call("GET", path);
      if (!asked.ok) throw new Error(await httpError(asked));
      const { process: now } = (await asked.json()) as { process: { status: string; exitCode: number | null } };
      if (now.status !== "running") {
        exitCode = now.exitCode ?? -1;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
    const logs = await this.call("GET", `${path}/logs`);
    if (!logs.ok) throw new Error(await httpError(logs));
    const { stdout, stderr } = (await logs.json()) as { stdout: string; stderr: string };
    return {
      success: exitCode === 0,
      exitCode,
      stdout,
      stderr,
      command,
      duration: Date.now() - started,
      timestamp: new Date(started).toISOString(),
    };
  }

  private async interruptPid(pid: number): Promise<void> {
    const command = this.commands.get(pid);
    if (!command || command.done || command.execId === undefined) return;
    const res = await this.call("POST", "/sandbox/interrupt", JSON.stringify({ execId: command.execId }));
    if (!res.ok) throw new Error(await httpError(res));
  }

  /** A request to this sandbox's room on duet serve. */
  private call(method: string, path: string, body?: BodyInit): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.env.DUET_STANDIN_TOKEN ?? ""}` };
    if (typeof body === "string") headers["Content-Type"] = "application/json";
    return fetch(`${this.base()}/api/rooms/${this.room()}${path}`, { method, headers, body });
  }

  /** The shared socket; a closed one is replaced on the next command. */
  private sharedSocket(): Promise<WebSocket> {
    this.socketOpen ??= this.socket("standin").then(
      (ws) => {
        ws.addEventListener("message", (m) => {
          const frame = parseFrame(m.data);
          if (frame?.type === "duet_process" && frame.phase === "exit") {
            this.exits.set(String(frame.processId), typeof frame.exitCode === "number" ? frame.exitCode : null);
          }
          if (frame) for (const listen of [...this.listeners]) listen(frame);
        });
        const lost = () => {
          this.socketOpen = undefined;
          for (const listen of [...this.listeners]) listen(null);
        };
        ws.addEventListener("close", lost);
        ws.addEventListener("error", lost);
        return ws;
      },
      (e) => {
        this.socketOpen = undefined;
        throw e;
      },
    );
    return this.socketOpen;
  }

  /** A socket to this sandbox's room on duet serve, as `user`. */
  private async socket(user: string): Promise<WebSocket> {
    const url = `${this.base()}/api/rooms/${this.room()}/ws?user=${user}`;
    const res = await fetch(url, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${this.env.DUET_STANDIN_TOKEN ?? ""}` },
    });
    const ws = res.webSocket;
    if (!ws) throw new Error(await httpError(res));
    ws.accept();
    return ws;
  }

  private base(): string {
    const url = this.env.DUET_STANDIN_URL;
    if (!url) throw new Error("DUET_STANDIN_URL is not set: the stand-in needs a duet serve (worker/dev.sh starts one)");
    return url.replace(/\/+$/, "");
  }

  private room(): string {
    if (!this.name) throw new Error("the stand-in sandbox has no name: reach it through getSandbox");
    return this.name;
  }
}

function nothingListens(port: number): Response {
  return new Response(JSON.stringify({ error: `nothing listens on port ${port} in the sandbox` }), {
    status: 502,
    headers: { "content-type": "application/json" },
  });
}

function closeQuietly(ws: WebSocket): void {
  try {
    ws.close(1000, "closed");
  } catch {
    // already closed
  }
}

/** `30s`, `10m`, `1h` or a number of seconds, in milliseconds. */
function parseDuration(value: string | number): number {
  if (typeof value === "number") return value * 1000;
  const m = /^(\d+(?:\.\d+)?)\s*(s|m|h)?$/.exec(value.trim());
  if (!m) return DEFAULT_SLEEP_AFTER_MS;
  const unit = m[2] === "h" ? 3_600_000 : m[2] === "m" ? 60_000 : 1000;
  return Number(m[1]) * unit;
}

/** `/workspace/a/b` as duet serve's file path `a/b` (percent-encoded). */
function filePath(path: string): string {
  if (!path.startsWith("/workspace/")) throw new Error(`INVALID_PATH: the stand-in reaches only /workspace, not ${path}`);
  return path.slice("/workspace/".length).split("/").map(encodeURIComponent).join("/");
}

function parseFrame(data: unknown): Record<string, any> | null {
  if (typeof data !== "string") return null;
  try {
    const value = JSON.parse(data);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}

/** An rpc failure in the words the SDK would use. */
function rpcError(frame: Record<string, any>): string {
  if (frame.status === 503) return "CONTAINER_UNAVAILABLE: container is starting, retry after 3";
  return String(frame.error ?? "the command could not run");
}

/** An error answer of duet serve as the SDK's error message. */
async function httpError(res: Response): Promise<string> {
  const text = await res.text();
  if (res.status === 503) {
    return `CONTAINER_UNAVAILABLE: container is starting, retry after ${res.headers.get("Retry-After") ?? 3}`;
  }
  return `duet serve answered ${res.status}: ${text}`;
}

async function fileError(res: Response, path: string): Promise<Error> {
  if (res.status === 404) return new Error(`FILE_NOT_FOUND: File not found: ${path}`);
  if (res.status === 507) return new Error(`NO_SPACE: the room's disk is full`);
  if (res.status === 400) return new Error(`INVALID_PATH: ${await res.text()}`);
  return new Error(await httpError(res));
}
