// A room's sandbox on Cloudflare: the one file that calls the Sandbox SDK
// (@cloudflare/sandbox 0.12.10; its 1.0 changes exec), with background.ts
// for the background processes and ports. It implements the seam of
// src/sandbox/types.ts for the room agent.

import { getSandbox, parseSSEStream, Sandbox as SdkSandbox } from "@cloudflare/sandbox";
import type { ExecEvent, FileStreamEvent } from "@cloudflare/sandbox";
import type { Env } from "../env";
import { ROOM_LABEL } from "../rooms";
import { deleteBackup } from "./backup";
import { byteLength, cutToBytes, shortHash, toBase64 } from "./bytes";
import { ptyOverSocket } from "./pty";
import {
  EMPTY_WORKSPACE_COMMAND,
  WORKSPACE_BYTES_COMMAND,
  type Signal,
  shellQuote,
  signalCommand,
} from "./signal";
import { CwdTrailer, takesTrailer } from "./trailer";
import { PROCESS_SESSION, listens, listeningPortsOf, processSession, startProcess } from "./background";
import { TUNNEL_PATH } from "./tunnel";
import { ABSENT, ARCHIVE_FILE_PREFIX, DIFF_COPY_PREFIX, DIFF_FILE_PREFIX, IS_A_FOLDER, NOT_A_FOLDER, OVER_SYMLINK, PUSH_DIR_PREFIX, THROUGH_SYMLINK, diffCleanupCommand, diffCommand, joinPartsCommand, packCommand, unpackCommand } from "./trees";
import { BadPath, InWorkspace, NotAFolder, type ExecOutcome, type ExecRequest, type FileStream, type FolderEntry, NotRegular, type WorkspaceCopy, type ListeningPort, NothingListens, type ProcessEvents, type SandboxProcess, type Pty, type PtyEvents, type RoomSandbox, SandboxStarting, type TermSize } from "./types";
import { WORKSPACE_DIR, workspacePath, UPLOAD_PART_BYTES, UPLOAD_DIR_PREFIX, bounded, fileBody, PartBuffer, fileError, asStarting, startingDelay, message, refusedUpgrade } from "./sdkio";

/** SIGINT first, SIGKILL this long after (docs/protocol.md, interrupt). */
const KILL_AFTER_MS = 2_000;
/** Past a command's timeout, how long the SDK has to kill it before the adapter does. */
const TIMEOUT_GRACE_MS = 1_000;
/** How long a killed command may take to report its end before the read stops. */
const STOP_WAIT_MS = 5_000;

/**
 * The sandbox id of a room: the room id lowercased and cut to 46
 * characters, then a hash of the exact id, so that ids differing only in
 * case get distinct sandboxes and every id fits the SDK's 63 characters
 * (never `normalizeId`, which would merge them).
 */
export async function sandboxId(roomId: string): Promise<string> {
  return `${roomId.toLowerCase().slice(0, 46)}-${await shortHash(roomId)}`;
}

/** The room's sandbox (one per room, named by sandboxId). */
export function roomSandbox(env: Env, roomId: string): RoomSandbox {
  return new CloudflareSandbox(env, roomId);
}

/** A command that runs, as interrupt() finds it. */
interface Running {
  pid?: number;
  /** UTF-8 bytes kept so far per stream. */
  bytes: { stdout: number; stderr: number };
  interrupted: boolean;
  signal(signal: Signal): void;
}

/** Commands running per room in this isolate (the room's Durable Object). */
const runningByRoom = new Map<string, Set<Running>>();

export type SdkStub = ReturnType<typeof getSandbox<SdkSandbox>>;

class CloudflareSandbox implements RoomSandbox {
  /** sandboxId's answer, hashed once per room. */
  private id?: Promise<string>;

  constructor(
    private readonly env: Env,
    private readonly roomId: string,
  ) {}

  private async stub(): Promise<SdkStub> {
    const idle = Number(this.env.DUET_SANDBOX_IDLE_SECS) || 600;
    const ns = this.env.Sandbox as DurableObjectNamespace<SdkSandbox>;
    // The label names the room, which the sandbox tells when it stops.
    return getSandbox(ns, await (this.id ??= sandboxId(this.roomId)), { sleepAfter: `${idle}s`, labels: { [ROOM_LABEL]: this.roomId } });
  }

  async exec(req: ExecRequest): Promise<ExecOutcome> {
    const sandbox = await this.stub();
    const started = Date.now();
    const outcome: ExecOutcome = {
      exitCode: null,
      stdout: "",
      stderr: "",
      durationMs: 0,
      truncated: false,
      timedOut: false,
      interrupted: false,
    };
    const stopReading = new AbortController();
    let startedAt: number | undefined;
    let endedAt: number | undefined;
    let stopTimer: number | undefined;
    const run: Running = {
      bytes: { stdout: 0, stderr: 0 },
      interrupted: false,
      signal: (signal) => {
        if (run.pid !== undefined) void this.signal(sandbox, signal, run.pid);
        // A command that ignores even SIGKILL's report is no longer waited for.
        if (signal === "KILL" && !stopTimer) {
          stopTimer = setTimeout(() => stopReading.abort(), STOP_WAIT_MS);
        }
      },
    };
    // The SDK kills at `timeout`; this is the backstop if it does not.
    const timeout = setTimeout(() => {
      outcome.timedOut = true;
      run.signal("KILL");
    }, req.timeoutMs + TIMEOUT_GRACE_MS);
    const running = this.running();
    running.add(run);
    // The shell's directory comes back in the same exec (trailer.ts), stripped from stderr; not
    // with a directory or variables of the command's own, which the trailer would see in place of the shell's.
    const trailer = req.cwd === undefined && req.env === undefined && takesTrailer(req.cmd) ? new CwdTrailer() : undefined;
    const flush = () => {
      const rest = trailer?.end();
      if (rest) this.output(req, outcome, run, "stderr", rest);
    };
    try {
      const streaming = sandbox.execStream(trailer ? trailer.wrap(req.cmd) : req.cmd, {
        timeout: req.timeoutMs,
        cwd: req.cwd,
        env: req.env,
      });
      req.onSent?.();
      const stream = await streaming;
      let ended = false;
      for await (const event of parseSSEStream<ExecEvent>(stream, stopReading.signal)) {
        if (event.type === "start") {
          startedAt = Date.now();
          run.pid = event.pid ?? undefined;
          if (run.interrupted) run.signal("INT");
        } else if (event.type === "stdout") {
          this.output(req, outcome, run, "stdout", event.data ?? "");
        } else if (event.type === "stderr") {
          const data = event.data ?? "";
          this.output(req, outcome, run, "stderr", trailer ? trailer.stderr(data) : data);
        } else if (event.type === "complete") {
          endedAt = Date.now();
          flush();
          outcome.exitCode = typeof event.exitCode === "number" ? event.exitCode : null;
          // An end that carries an error is a shell that ended: by itself (it has a status) or killed.
          if (outcome.exitCode === null || event.error !== undefined) {
            outcome.error = event.error ?? "the shell was restarted";
            outcome.shell = outcome.exitCode === null ? "stopped" : "exited";
          }
          ended = true;
          break;
        } else if (event.type === "error") {
          flush();
          outcome.error = event.error ?? event.data ?? "the command failed";
          const starting = startingDelay(outcome.error);
          if (starting !== null && run.pid === undefined) throw new SandboxStarting(starting);
          if (/time(d)? ?out/i.test(outcome.error)) {
            outcome.timedOut = true;
            run.signal("KILL");
          }
          ended = true;
          break;
        }
      }
      if (!ended) {
        flush();
        outcome.error ??= "the sandbox stopped answering before the command ended";
      }
    } catch (e) {
      if (e instanceof SandboxStarting) throw e;
      const starting = startingDelay(e);
      if (starting !== null) throw new SandboxStarting(starting);
      outcome.error = stopReading.signal.aborted
        ? "the command did not end after SIGKILL"
        : `the sandbox could not run the command: ${message(e)}`;
    } finally {
      clearTimeout(timeout);
      clearTimeout(stopTimer ?? null);
      running.delete(run);
    }
    outcome.durationMs = Date.now() - started;
    outcome.interrupted = run.interrupted;
    const asked = Date.now();
    // Killed at the SDK's timeout: it reports only the exit status.
    if (outcome.durationMs >= req.timeoutMs && outcome.exitCode !== 0) outcome.timedOut = true;
    if (outcome.interrupted) outcome.timedOut = false;
    // A shell that ended (or a command sent without the trailer) is asked where it is.
    outcome.cwd = trailer?.cwd ?? (await this.workingDirectory(sandbox));
    outcome.spans = {
      command: asked - started,
      ...(startedAt !== undefined && { start: startedAt - started }),
      ...(startedAt !== undefined && endedAt !== undefined && { run: endedAt - startedAt }),
      cwd: Date.now() - asked,
    };
    return outcome;
  }

  /**
   * Where the session's shell is: `pwd` in it (the SDK tells no other way;
   * `exec` runs in the session's shell itself). Undefined when it cannot say.
   */
  private async workingDirectory(sandbox: SdkStub): Promise<string | undefined> {
    try {
      const result = await sandbox.exec("pwd");
      const cwd = result.stdout.replace(/\n$/, "");
      return result.exitCode === 0 && cwd.startsWith("/") && !cwd.includes("\n") ? cwd : undefined;
    } catch (e) {
      console.error(`the working directory of room ${this.roomId} is unknown: ${message(e)}`);
      return undefined;
    }
  }

  /** Keeps output up to the cap; beyond it the command is killed. */
  private output(
    req: ExecRequest,
    outcome: ExecOutcome,
    run: Running,
    stream: "stdout" | "stderr",
    data: string,
  ): void {
    if (outcome.truncated || data === "") return;
    const room = req.outputCap - run.bytes[stream];
    let kept = data;
    let size = byteLength(data);
    if (size > room) {
      kept = cutToBytes(data, Math.max(room, 0));
      size = byteLength(kept);
      outcome.truncated = true;
      run.signal("KILL");
    }
    if (kept === "") return;
    run.bytes[stream] += size;
    outcome[stream] += kept;
    if (stream === "stdout") req.onStdout(kept);
    else req.onStderr(kept);
  }

  async interrupt(): Promise<boolean> {
    const running = [...this.running()];
    const current = running.reverse().find((r) => !r.interrupted);
    if (!current) return false;
    current.interrupted = true;
    current.signal("INT");
    setTimeout(() => {
      if (this.running().has(current)) current.signal("KILL");
    }, KILL_AFTER_MS);
    return true;
  }

  async readFile(path: string): Promise<Uint8Array | null> {
    const file = await this.openFile(path);
    return file === null ? null : new Uint8Array(await new Response(file.body).arrayBuffer());
  }

  /**
   * The SDK's readFileStream (its events decoded as they come), once a
   * `stat` beside the shell said the path is a regular file: a FIFO is
   * never opened, so it holds up no reader. Each wait is bounded.
   */
  async openFile(path: string): Promise<FileStream | null> {
    const sandbox = await this.stub();
    const full = workspacePath(path);
    const kind = await bounded(this.beside(sandbox, `stat -L -c %F -- ${shellQuote(full)}`), `checking ${path}`);
    if (kind.exitCode !== 0) {
      if (/No such file|Not a directory/i.test(kind.stderr)) return null;
      throw fileError(new Error(kind.stderr.trim() || `checking ${path} failed`));
    }
    const type = kind.stdout.trim();
    if (type === "directory") return null;
    if (!type.startsWith("regular")) throw new NotRegular();
    try {
      const stream = await bounded(sandbox.readFileStream(full), `reading ${path}`);
      const events = parseSSEStream<FileStreamEvent>(stream)[Symbol.asyncIterator]();
      const first = await bounded(events.next(), `reading ${path}`);
      if (first.done) throw new Error(`reading ${path}: the stream ended before it began`);
      if (first.value.type === "error") throw new Error(first.value.error);
      if (first.value.type !== "metadata") throw new Error(`reading ${path}: a ${first.value.type} came before the metadata`);
      return { size: first.value.size, body: fileBody(events, first.value.encoding) };
    } catch (e) {
      if (/not found|FILE_NOT_FOUND|ENOENT/i.test(message(e))) return null;
      throw fileError(e);
    }
  }

  async writeFile(path: string, bytes: Uint8Array): Promise<void> {
    await this.writeFileFrom(path, [bytes]);
  }

  /**
   * The SDK's writeFile takes a whole string (a stream only over its rpc
   * transport), so a body goes in parts of UPLOAD_PART_BYTES to a hidden
   * folder, then one command beside the shell joins them and renames the
   * result over the file: only one part is ever held here.
   */
  async writeFileFrom(path: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<number> {
    const sandbox = await this.stub();
    const parts = `${WORKSPACE_DIR}/${UPLOAD_DIR_PREFIX}${crypto.randomUUID()}`;
    try {
      const written = await this.sendParts(sandbox, parts, chunks);
      const joined = await this.beside(sandbox, joinPartsCommand(parts, path));
      if (joined.exitCode === THROUGH_SYMLINK) throw new BadPath("passes through a symlink");
      if (joined.exitCode === NOT_A_FOLDER) throw new BadPath("a parent is not a directory");
      if (joined.exitCode === IS_A_FOLDER) throw new BadPath("is a directory");
      if (joined.exitCode !== 0) throw fileError(new Error(`writing ${path} failed: ${joined.stderr.trim()}`));
      return written;
    } finally {
      await this.removeQuietly(sandbox, parts);
    }
  }

  /**
   * Sends `chunks` into folder `parts` as files `part-NNNNNN` of
   * UPLOAD_PART_BYTES (the SDK's writeFile takes a whole string): only one
   * part is ever held here. The number of bytes sent.
   */
  private async sendParts(sandbox: SdkStub, parts: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<number> {
    let written = 0;
    let count = 0;
    const put = async (bytes: Uint8Array) => {
      const name = `${parts}/part-${String(count++).padStart(6, "0")}`;
      try {
        await sandbox.writeFile(name, toBase64(bytes), { encoding: "base64" });
      } catch (e) {
        throw fileError(e);
      }
    };
    try {
      await sandbox.mkdir(parts, { recursive: true });
    } catch (e) {
      throw fileError(e);
    }
    const held = new PartBuffer(UPLOAD_PART_BYTES);
    for await (const chunk of chunks) {
      written += chunk.byteLength;
      for (const part of held.add(chunk)) await put(part);
    }
    await put(held.rest());
    return written;
  }

  /** `rm -rf` of a scratch path beside the shell; a failure is only logged. */
  private async removeQuietly(sandbox: SdkStub, path: string): Promise<void> {
    await this.beside(sandbox, `rm -rf -- ${shellQuote(path)}`).catch((e) => {
      console.error(`removing ${path} in room ${this.roomId} failed: ${message(e)}`);
    });
  }

  /** The parts go in first (sendParts); one command beside the shell unpacks and places them (src/sandbox/trees.ts). */
  async unpackArchive(dir: string, tar: AsyncIterable<Uint8Array>, mirror: boolean): Promise<{ deleted: number }> {
    const sandbox = await this.stub();
    const scratch = `${WORKSPACE_DIR}/${PUSH_DIR_PREFIX}${crypto.randomUUID()}`;
    let unpacking = false;
    try {
      await this.sendParts(sandbox, `${scratch}/parts`, tar);
      unpacking = true;
      const done = await this.beside(sandbox, unpackCommand(scratch, dir, mirror));
      const said = done.stdout.trim();
      if (done.exitCode === THROUGH_SYMLINK) throw new BadPath("passes through a symlink");
      if (done.exitCode === NOT_A_FOLDER) throw new NotAFolder();
      if (done.exitCode === OVER_SYMLINK) {
        const folder = said.slice(said.indexOf("\t") + 1);
        throw new InWorkspace(folder, "passes through a symlink");
      }
      const deleted = /^deleted (\d+)$/m.exec(said);
      if (done.exitCode !== 0 || !deleted) throw fileError(new Error(`unpacking the archive failed: ${done.stderr.trim() || said}`));
      return { deleted: Number(deleted[1]) };
    } finally {
      // The command removes its scratch itself; a failed upload leaves it here.
      if (!unpacking) await this.removeQuietly(sandbox, scratch);
    }
  }

  /** tar in the container into a scratch file, then the SDK's readFileStream of it; the file goes once read (or abandoned). */
  async packArchive(dir: string): Promise<ReadableStream<Uint8Array> | null> {
    const sandbox = await this.stub();
    const out = `${WORKSPACE_DIR}/${ARCHIVE_FILE_PREFIX}${crypto.randomUUID()}.tar`;
    const packed = await this.beside(sandbox, packCommand(dir, out));
    if (packed.exitCode === ABSENT) return null;
    if (packed.exitCode === THROUGH_SYMLINK) throw new BadPath("passes through a symlink");
    if (packed.exitCode === NOT_A_FOLDER) throw new NotAFolder();
    if (packed.exitCode !== 0) throw fileError(new Error(`packing ${dir || "/workspace"} failed: ${packed.stderr.trim()}`));
    return this.readScratch(sandbox, out, () => this.removeQuietly(sandbox, out));
  }

  /**
   * The checkpoint's copy restored beside the workspace (restoreBackup into
   * a folder of /tmp: the SDK restores into any `dir`), compared by git into
   * a scratch file, which is then read out; both go once read.
   */
  async diffWorkspace(copy: WorkspaceCopy): Promise<ReadableStream<Uint8Array>> {
    const sandbox = await this.stub();
    const id = crypto.randomUUID();
    const copyDir = `${DIFF_COPY_PREFIX}${id}`;
    const out = `${WORKSPACE_DIR}/${DIFF_FILE_PREFIX}${id}.patch`;
    const cleanup = diffCleanupCommand(copyDir, out);
    try {
      await sandbox.restoreBackup({ id: copy.id, dir: `${copyDir}/old`, ...(copy.localBucket !== undefined && { localBucket: copy.localBucket }) });
      const compared = await this.beside(sandbox, diffCommand(copyDir, out));
      if (compared.exitCode !== 0) throw new Error(`git diff failed: ${compared.stderr.trim()}`);
    } catch (e) {
      await this.beside(sandbox, cleanup).catch(() => undefined);
      throw asStarting(e);
    }
    return this.readScratch(sandbox, out, async () => {
      await this.beside(sandbox, cleanup).catch((e) => console.error(`removing a diff's copy in room ${this.roomId} failed: ${message(e)}`));
    });
  }

  /** A scratch file's bytes as they come (readFileStream); `done` once they were read, failed or were abandoned. */
  private async readScratch(sandbox: SdkStub, file: string, done: () => Promise<void>): Promise<ReadableStream<Uint8Array>> {
    let body: ReadableStream<Uint8Array>;
    try {
      const stream = await bounded(sandbox.readFileStream(file), `reading ${file}`);
      const events = parseSSEStream<FileStreamEvent>(stream)[Symbol.asyncIterator]();
      const first = await bounded(events.next(), `reading ${file}`);
      if (first.done) throw new Error(`reading ${file}: the stream ended before it began`);
      if (first.value.type === "error") throw new Error(first.value.error);
      if (first.value.type !== "metadata") throw new Error(`reading ${file}: a ${first.value.type} came before the metadata`);
      body = fileBody(events, first.value.encoding);
    } catch (e) {
      await done();
      throw fileError(e);
    }
    const reader = body.getReader();
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            controller.close();
            await done();
          } else controller.enqueue(next.value);
        } catch (e) {
          controller.error(e);
          await done();
        }
      },
      async cancel() {
        await reader.cancel().catch(() => undefined);
        await done();
      },
    });
  }

  async listFiles(dir: string): Promise<FolderEntry[] | null> {
    const sandbox = await this.stub();
    try {
      const listed = await sandbox.listFiles(dir === "" ? WORKSPACE_DIR : workspacePath(dir), { includeHidden: true });
      return listed.files.map((f) => ({
        name: f.name,
        type: f.type === "directory" ? "dir" : f.type,
        size: f.size,
        mtime: Date.parse(f.modifiedAt) || 0,
      }));
    } catch (e) {
      if (/not found|FILE_NOT_FOUND|ENOENT|not a directory|NOT_DIRECTORY|ENOTDIR/i.test(message(e))) return null;
      throw fileError(e);
    }
  }

  async deleteFile(path: string): Promise<boolean> {
    const sandbox = await this.stub();
    const full = workspacePath(path);
    try {
      await sandbox.deleteFile(full);
      return true;
    } catch (e) {
      const text = message(e);
      if (/not found|FILE_NOT_FOUND|ENOENT/i.test(text)) return false;
      // The SDK's deleteFile takes files; a folder goes with everything in it.
      if (!/directory|EISDIR|IS_DIRECTORY/i.test(text)) throw fileError(e);
    }
    const removed = await this.beside(sandbox, `rm -rf -- ${shellQuote(full)}`);
    if (removed.exitCode !== 0) throw new Error(`deleting ${path} failed: ${removed.stderr.trim()}`);
    return true;
  }

  async workspaceBytes(): Promise<number> {
    const counted = await this.beside(await this.stub(), WORKSPACE_BYTES_COMMAND);
    const bytes = Number(counted.stdout.trim());
    if (counted.exitCode !== 0 || !Number.isSafeInteger(bytes)) {
      throw new Error(`the workspace's size could not be read: ${counted.stderr.trim() || counted.stdout.trim()}`);
    }
    return bytes;
  }

  async copyWorkspace(name: string, ttlSecs: number): Promise<WorkspaceCopy> {
    const sandbox = await this.stub();
    try {
      const copy = await sandbox.createBackup({ dir: WORKSPACE_DIR, name, ttl: ttlSecs, excludes: [".duet-backup"] });
      return { id: copy.id, dir: copy.dir, ...(copy.localBucket !== undefined && { localBucket: copy.localBucket }) };
    } catch (e) {
      throw asStarting(e);
    }
  }

  async restoreWorkspace(copy: WorkspaceCopy): Promise<void> {
    const sandbox = await this.stub();
    try {
      // An overlay of an earlier restore comes off first; the folder is emptied, so no file of now stays.
      const emptied = await this.beside(sandbox, EMPTY_WORKSPACE_COMMAND);
      if (emptied.exitCode !== 0) throw new Error(`/workspace could not be emptied: ${emptied.stderr.trim()}`);
      await sandbox.restoreBackup({ id: copy.id, dir: copy.dir, ...(copy.localBucket !== undefined && { localBucket: copy.localBucket }) });
    } catch (e) {
      throw asStarting(e);
    }
    // A fresh command shell in /workspace, no exported variables: its old one ends.
    try {
      await sandbox.exec("exit 0");
    } catch (e) {
      console.error(`restarting the shell of room ${this.roomId} failed: ${message(e)}`);
    }
  }

  /** A command in the processes' session, beside the commands' shell (which may be busy). */
  private async beside(sandbox: SdkStub, cmd: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    try {
      return await sandbox.execWithSessionToken(cmd, PROCESS_SESSION);
    } catch (e) {
      const starting = startingDelay(e);
      if (starting !== null) throw new SandboxStarting(starting);
      // A container without the session yet.
      await processSession(sandbox);
      return await sandbox.execWithSessionToken(cmd, PROCESS_SESSION);
    }
  }

  /**
   * The terminal is the PTY of a session of its own (`terminal()` of
   * `createSession`), so that closing it (deleteSession) ends its processes
   * and leaves the commands' shell alone. The container counts the open
   * socket as activity: it does not sleep while the terminal runs.
   */
  async openTerminal(termId: string, size: TermSize, events: PtyEvents): Promise<Pty> {
    const sandbox = await this.stub();
    const id = `duet-term-${termId}`;
    try {
      const session = await sandbox.createSession({ id, cwd: "/workspace" });
      const upgrade = new Request("http://localhost/ws/pty", { headers: { Upgrade: "websocket" } });
      const res = await session.terminal(upgrade, { cols: size.cols, rows: size.rows, shell: "bash" });
      return await ptyOverSocket(res, events, async () => {
        try {
          await sandbox.deleteSession(id);
        } catch (e) {
          console.error(`ending the terminal of room ${this.roomId} failed: ${message(e)}`);
        }
      });
    } catch (e) {
      throw asStarting(e);
    }
  }

  async destroy(): Promise<void> {
    for (const run of this.running()) run.signal("KILL");
    // The backup first: a container started in between must not bring files back.
    const objectId = this.env.Sandbox.idFromName(await sandboxId(this.roomId)).toString();
    await deleteBackup(this.env.WORKSPACES, objectId);
    try {
      await (await this.stub()).destroy();
    } catch (e) {
      throw asStarting(e);
    }
  }

  async startProcess(id: string, cmd: string, events: ProcessEvents): Promise<SandboxProcess> {
    return startProcess(await this.stub(), this.roomId, id, cmd, events);
  }

  async listeningPorts(): Promise<ListeningPort[]> {
    return listeningPortsOf(await this.stub(), this.env, this.roomId);
  }

  /** `containerFetch` (`wsConnect` for an upgrade) once the port is seen listening. */
  async fetchPort(port: number, request: Request): Promise<Response> {
    if (!(await listens(await this.stub(), this.env, this.roomId, port))) throw new NothingListens(port);
    const sandbox = await this.stub();
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return refusedUpgrade(await sandbox.wsConnect(request, port), port);
    return sandbox.containerFetch(request, port);
  }

  /** The production class's (and the stand-in's) TUNNEL_PATH. */
  async tunnel(port: number, request: Request, bytesPerSec: number): Promise<Response> {
    const sandbox = await this.stub();
    const rate = Number.isFinite(bytesPerSec) ? `?rate=${bytesPerSec}` : "";
    return refusedUpgrade(await sandbox.fetch(new Request(`http://localhost${TUNNEL_PATH}${port}${rate}`, request)), port);
  }

  private running(): Set<Running> {
    let set = runningByRoom.get(this.roomId);
    if (!set) {
      set = new Set();
      runningByRoom.set(this.roomId, set);
    }
    return set;
  }

  /** Sends `signal` to `pid` from a background process beside the busy shell. */
  private async signal(sandbox: SdkStub, signal: Signal, pid: number): Promise<void> {
    try {
      await sandbox.startProcess(signalCommand(signal, pid));
    } catch (e) {
      console.error(`SIG${signal} to ${pid} in room ${this.roomId} failed: ${message(e)}`);
    }
  }
}

