// The stand-in's "container" (standin.ts is the Sandbox SDK's methods on
// it): its configuration, its start (503 while starting, the workspace
// restored from R2) and its sleep (backed up, then wiped), its /workspace
// (files, backups) and the `duet serve` room it forwards to.

import { DurableObject } from "cloudflare:workers";
import { fromBase64, toBase64 } from "../src/sandbox/bytes";
import type { Env } from "../src/env";
import { ROOM_LABEL, tellSandboxStopped } from "../src/rooms";
import { WorkspacePersistence, archiveWorkspace, copyPrefix, unpackWorkspace, type WorkspaceHost } from "../src/sandbox/backup";

interface Configuration {
  sandboxName?: { name: string };
  sleepAfter?: string | number;
  labels?: Record<string, string>;
}

export interface StreamOptions {
  timeout?: number;
  cwd?: string;
  env?: Record<string, string>;
}

/** The SDK's ExecResult. */
export interface ExecResult {
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
export interface Command {
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
/**
 * Activity goes to storage at most this often (and a tenth of `sleepAfter`
 * when that is less), unconfirmed: each write of local workerd's SQLite is an
 * fsync on its one thread, which every command paid twice over. Only a
 * restart of this object reads it back, and may lose that much idle time.
 */
const ACTIVITY_STORE_MS = 1000;
/** A command's timeout when the caller gives none (duet serve caps it). */
export const LONGEST_MS = 3_600_000;

export abstract class StandInContainer extends DurableObject<Env> {
  protected name: string | null = null;
  /** The room this sandbox is of (the `duet-room` label). */
  protected roomId?: string;
  protected sleepAfterMs = DEFAULT_SLEEP_AFTER_MS;
  /** Whether a "container" runs (its workspace restored); kept in storage. */
  protected awake = false;
  /** When the container was last used (storage has it as of `activityStoredAt`). */
  protected lastActivity = 0;
  private activityStoredAt = 0;
  /** Open command streams: the container is not idle while one runs. */
  protected busy = 0;
  protected nextPid = 1000;
  protected readonly commands = new Map<number, Command>();
  /** Commands running beside the shell, and those waiting for a turn. */
  protected besideRunning = 0;
  protected readonly besideWaiting: Array<() => void> = [];
  /** One socket to duet serve's room, shared by the commands (opened on first use). */
  protected socketOpen?: Promise<WebSocket>;
  /** The running commands' frame handlers; null when the socket closed. */
  protected readonly listeners = new Set<(frame: Record<string, any> | null) => void>();
  protected persistence?: WorkspacePersistence;
  protected readonly sessions = new Map<string, Session>();
  /** The adapter's process ids, to duet serve's. */
  protected readonly processes = new Map<string, string>();
  /** The exit codes of duet serve's processes that ended, as the shared socket saw them. */
  protected readonly exits = new Map<string, number | null>();
  /** When the starting "container" is ready (0: not starting). */
  protected startingUntil = 0;
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
      this.lastActivity = (await ctx.storage.get<number>("lastActivity")) ?? 0;
      this.activityStoredAt = this.lastActivity;
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

  /** SDK restoreBackup: the archive unpacked into `backup.dir` (over what is there, as the SDK's local mode does). */
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
    // As the SDK's: into any folder under these (a diff restores a checkpoint beside /workspace).
    if (!/^\/(workspace|home|tmp|var\/tmp|app)(\/|$)/.test(backup.dir) || backup.dir.split("/").includes("..")) {
      throw new Error(`INVALID_BACKUP_CONFIG: Invalid backup: dir must be under /workspace, /home, /tmp, /var/tmp or /app, not ${backup.dir}`);
    }
    await this.wake();
    await unpackWorkspace(this.host(), bucket, prefix, meta.parts, backup.dir);
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
    const due = this.lastActivity + this.sleepAfterMs;
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

  protected workspace(): WorkspacePersistence {
    this.persistence ??= new WorkspacePersistence(this.env.WORKSPACES, this.ctx.id.toString());
    return this.persistence;
  }

  /** The SDK methods without wake(), for the backup and the restore. */
  protected host(): WorkspaceHost {
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
  protected async wake(): Promise<void> {
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

  /**
   * Activity: the sleep timer starts again. The alarm is set for the stored
   * activity's end; when it fires early, alarm() sets it again for the last.
   */
  protected async touch(): Promise<void> {
    const now = Date.now();
    this.lastActivity = now;
    if (now - this.activityStoredAt < Math.min(ACTIVITY_STORE_MS, this.sleepAfterMs / 10)) return;
    this.activityStoredAt = now;
    await this.ctx.storage.put("lastActivity", now, { allowUnconfirmed: true });
    await this.ctx.storage.setAlarm(now + this.sleepAfterMs, { allowUnconfirmed: true });
  }

  /** The container is gone: files, processes and the shell. */
  protected async wipe(): Promise<void> {
    const res = await this.call("POST", "/cleanup", "{}");
    if (!res.ok && res.status !== 207) throw new Error(`duet serve's cleanup answered ${res.status}: ${await res.text()}`);
    this.commands.clear();
    this.sessions.clear();
    this.processes.clear();
    this.exits.clear();
    this.awake = false;
    // The next start's first activity sets the alarm again (destroy() deleted it).
    this.activityStoredAt = 0;
    await this.ctx.storage.put("awake", false);
  }

  protected async run(command: string, options: StreamOptions): Promise<ExecResult> {
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
  protected async runBeside(command: string): Promise<ExecResult> {
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
  protected async runBesideNow(command: string): Promise<ExecResult> {
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

  protected async interruptPid(pid: number): Promise<void> {
    const command = this.commands.get(pid);
    if (!command || command.done || command.execId === undefined) return;
    const res = await this.call("POST", "/sandbox/interrupt", JSON.stringify({ execId: command.execId }));
    if (!res.ok) throw new Error(await httpError(res));
  }

  /** A request to this sandbox's room on duet serve. */
  protected call(method: string, path: string, body?: BodyInit): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.env.DUET_STANDIN_TOKEN ?? ""}` };
    if (typeof body === "string") headers["Content-Type"] = "application/json";
    return fetch(`${this.base()}/api/rooms/${this.room()}${path}`, { method, headers, body });
  }

  /** The shared socket; a closed one is replaced on the next command. */
  protected sharedSocket(): Promise<WebSocket> {
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

  /**
   * A socket to this sandbox's room on duet serve, as `user`: with deltas,
   * so that a command costs it its own frames, not the room's whole state
   * (its commands, their output) again at each start and end.
   */
  protected async socket(user: string): Promise<WebSocket> {
    const url = `${this.base()}/api/rooms/${this.room()}/ws?user=${user}&deltas=1`;
    const res = await fetch(url, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${this.env.DUET_STANDIN_TOKEN ?? ""}` },
    });
    const ws = res.webSocket;
    if (!ws) throw new Error(await httpError(res));
    ws.accept();
    return ws;
  }

  protected base(): string {
    const url = this.env.DUET_STANDIN_URL;
    if (!url) throw new Error("DUET_STANDIN_URL is not set: the stand-in needs a duet serve (worker/dev.sh starts one)");
    return url.replace(/\/+$/, "");
  }

  protected room(): string {
    if (!this.name) throw new Error("the stand-in sandbox has no name: reach it through getSandbox");
    return this.name;
  }
}

export function nothingListens(port: number): Response {
  return new Response(JSON.stringify({ error: `nothing listens on port ${port} in the sandbox` }), {
    status: 502,
    headers: { "content-type": "application/json" },
  });
}

export function closeQuietly(ws: WebSocket): void {
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

export function parseFrame(data: unknown): Record<string, any> | null {
  if (typeof data !== "string") return null;
  try {
    const value = JSON.parse(data);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}

/** Why duet serve refused a path: its `details.path` sentence (its whole body if it has none). */
async function refusal(res: Response): Promise<string> {
  const text = await res.text();
  const why = parseFrame(text)?.details?.path?.[0];
  return typeof why === "string" ? why : text;
}

/** An rpc failure in the words the SDK would use. */
export function rpcError(frame: Record<string, any>): string {
  if (frame.status === 503) return "CONTAINER_UNAVAILABLE: container is starting, retry after 3";
  return String(frame.error ?? "the command could not run");
}

/** An error answer of duet serve as the SDK's error message. */
export async function httpError(res: Response): Promise<string> {
  const text = await res.text();
  if (res.status === 503) {
    return `CONTAINER_UNAVAILABLE: container is starting, retry after ${res.headers.get("Retry-After") ?? 3}`;
  }
  return `duet serve answered ${res.status}: ${text}`;
}

async function fileError(res: Response, path: string): Promise<Error> {
  if (res.status === 404) return new Error(`FILE_NOT_FOUND: File not found: ${path}`);
  if (res.status === 507) return new Error(`NO_SPACE: the room's disk is full`);
  if (res.status === 400) return new Error(`INVALID_PATH: ${await refusal(res)}`);
  return new Error(await httpError(res));
}
