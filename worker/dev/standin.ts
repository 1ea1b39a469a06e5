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
// and where the production class (src/sandbox/container.ts) adds to the SDK: the label
// `duet-room` names its room, which it tells when its container sleeps.
// Its "container" (start, sleep, files, backups) is dev/container.ts's.

import { fromBase64, toBase64 } from "../src/sandbox/bytes";
import type { WorkspaceHost } from "../src/sandbox/backup";
import { GROUP_SIGNAL_COMMAND, PORTS_COMMAND, SIGNAL_COMMAND, parseProcessCommand, tcpTable } from "../src/sandbox/signal";
import { http1, socketStream, websocket1 } from "./http1";
import { TUNNEL_PATH, tunnelOverWebSocket } from "../src/sandbox/tunnel";
import { LONGEST_MS, StandInContainer, closeQuietly, httpError, nothingListens, parseFrame, rpcError, type Command, type ExecResult, type StreamOptions } from "./container";

export class SandboxStandIn extends StandInContainer implements WorkspaceHost {
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
    return { status: this.awake ? "healthy" : "stopped", lastChange: this.lastActivity };
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
}
