// The room's background processes (docs/protocol.md "Background processes
// and ports"): started in the room's sandbox (src/sandbox/types.ts
// `startProcess`), listed (those that run and the last 20 ended, with their
// logs' last 64 KiB per stream), their output coalesced to the sockets that
// follow them, killed (SIGTERM, SIGKILL 2 s later), and all ended by a
// cleanup. The list and the ended ones' logs are kept in the Durable
// Object's storage (store.ts), so they outlive a hibernation.
//
// Followers live in memory: the object does not hibernate while a process
// runs (it reads the process's log stream), and a socket follows only a
// process that runs.

import { ApiError, describe, ok, type Reply } from "./http";
import {
  ENDED_PROCESSES_KEPT,
  PROCESS_LOG_BYTES,
  processExitFrame,
  processJson,
  processOutputFrame,
  processStartFrame,
  type Process,
} from "./protocol";
import { SandboxStarting, type RoomSandbox, type SandboxProcess } from "./sandbox/types";
import type { StoredProcess } from "./store";

/** SIGTERM first, SIGKILL this long after. */
export const KILL_AFTER_MS = 2_000;
/** How long a process may take to report its end after SIGKILL before the room stops waiting. */
const GONE_AFTER_MS = 5_000;
/** At most one output frame per stream of a process this often. */
export const COALESCE_MS = 25;
/** Bytes of one output frame at most. */
export const FRAME_BYTES = 64 * 1024;
/** 128 + SIGTERM, 128 + SIGKILL. */
const TERMINATED = 143;
const KILLED = 137;

type Stream = "stdout" | "stderr";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The last `cap` UTF-8 bytes of a stream (a character cut by the limit dropped). */
export class LogTail {
  private text: string;
  private bytes: number;

  constructor(
    initial = "",
    private readonly cap = PROCESS_LOG_BYTES,
  ) {
    this.text = initial;
    this.bytes = encoder.encode(initial).length;
  }

  append(data: string): void {
    this.text += data;
    this.bytes += encoder.encode(data).length;
    // Cut lazily: at twice the cap, back to the cap.
    if (this.bytes > 2 * this.cap) this.cut();
  }

  /** The kept text. */
  value(): string {
    if (this.bytes > this.cap) this.cut();
    return this.text;
  }

  private cut(): void {
    const all = encoder.encode(this.text);
    let start = all.length - this.cap;
    while (start < all.length && (all[start] & 0xc0) === 0x80) start++;
    this.text = decoder.decode(all.subarray(start));
    this.bytes = all.length - start;
  }
}

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, and the rest. */
function splitAtBytes(text: string, bytes: number): [string, string] {
  if (text.length * 3 <= bytes) return [text, ""];
  const all = encoder.encode(text);
  if (all.length <= bytes) return [text, ""];
  let end = bytes;
  while (end > 0 && (all[end] & 0xc0) === 0x80) end--;
  const head = decoder.decode(all.subarray(0, end));
  return [head, text.slice(head.length)];
}

/** One process of the room. */
interface Entry {
  process: Process;
  logs: Record<Stream, LogTail>;
  /** Listed (and announced): its start succeeded. */
  listed: boolean;
  handle?: SandboxProcess;
  followers: Set<string>;
  /** Output not yet sent to the followers, per stream. */
  pending: Record<Stream, string>;
  lastFrame: Record<Stream, number>;
  timers: Partial<Record<Stream, ReturnType<typeof setTimeout>>>;
  /** Someone asked to stop it: SIGTERM went, SIGKILL maybe. */
  killing: boolean;
  killSent: boolean;
  killTimer?: ReturnType<typeof setTimeout>;
  goneTimer?: ReturnType<typeof setTimeout>;
  /** The exit the sandbox reported before the start was answered. */
  earlyExit?: { code: number | null };
  ended: Promise<void>;
  end: () => void;
}

/** What the processes need of their room. */
export interface ProcessHost {
  sandbox(): RoomSandbox;
  /** A frame to every socket. */
  all(text: string): void;
  /** A frame to one socket, by connection id. */
  send(connection: string, text: string): void;
  /** The room state's `processes` changed. */
  changed(processes: Process[]): void;
  /** How many run changed (the room keeps its sandbox awake and looks for ports while any does). */
  runningChanged(running: number): void;
  /** The next process number (kept: ids are never used twice). */
  takeNumber(): number;
  save(p: StoredProcess): void;
  forget(id: string): void;
}

export class Processes {
  private readonly entries = new Map<string, Entry>();
  /** Starts asked for and not yet answered: they count against the cap. */
  private starting = 0;

  constructor(
    private readonly host: ProcessHost,
    private readonly max: number,
    stored: StoredProcess[],
  ) {
    const now = Date.now();
    for (const s of stored) {
      const process = { ...s.process };
      // The object restarted under it: its log stream is gone, so the room cannot follow it.
      if (process.status === "running") {
        process.status = "exited";
        process.exitCode = null;
        process.endedAt = now;
        host.save({ process, stdout: s.stdout, stderr: s.stderr });
      }
      const entry = this.entry(process, s.stdout, s.stderr);
      entry.listed = true;
      entry.end();
      this.entries.set(process.id, entry);
    }
  }

  /** The state's `processes`: those that run and the last ended, oldest first. */
  list(): Process[] {
    return [...this.entries.values()].filter((e) => e.listed).map((e) => ({ ...e.process }));
  }

  running(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.process.status === "running") n++;
    return n;
  }

  /** `POST /processes`, rpc `process_start`: `{process}` once it runs. */
  async start(cmd: string, name: string, by: string): Promise<Reply> {
    if (this.running() + this.starting >= this.max) {
      return new ApiError(409, "too many processes", {
        processes: [`at most ${this.max} processes run at once in a room`],
      }).reply();
    }
    this.starting++;
    const id = `p${this.host.takeNumber()}`;
    const process: Process = { id, name, cmd, by, status: "running", exitCode: null, startedAt: Date.now() };
    const entry = this.entry(process);
    this.entries.set(id, entry);
    try {
      entry.handle = await this.host.sandbox().startProcess(id, cmd, {
        onOutput: (stream, data) => this.output(entry, stream, data),
        onExit: (code) => this.exited(entry, code),
      });
    } catch (e) {
      this.entries.delete(id);
      entry.end();
      if (e instanceof SandboxStarting) return ApiError.starting(e.retryAfterSecs).reply();
      return ApiError.internal(`the process could not start: ${describe(e)}`).reply();
    } finally {
      this.starting--;
    }
    entry.listed = true;
    this.host.save(this.stored(entry));
    this.host.all(processStartFrame(process));
    const early = entry.earlyExit;
    if (early) this.finish(entry, early.code);
    else this.host.runningChanged(this.running());
    this.trim();
    this.host.changed(this.list());
    return ok({ process: processJson(process) });
  }

  /** `GET /processes/{id}` */
  get(id: string): Reply {
    return ok({ process: processJson(this.find(id).process) });
  }

  /** `GET /processes/{id}/logs` */
  logs(id: string): Reply {
    const e = this.find(id);
    return ok({ stdout: e.logs.stdout.value(), stderr: e.logs.stderr.value() });
  }

  /**
   * rpc `process_follow` by socket `connection`: the log so far, and from
   * then on its output frames (none missing, none twice). Synchronous, so
   * that no output comes between the log and the answer the caller sends.
   */
  follow(connection: string, id: string): Reply {
    const e = this.find(id);
    // What the followers have not got yet goes out first: the log holds it.
    this.flushAll(e);
    const reply = ok({ processId: id, stdout: e.logs.stdout.value(), stderr: e.logs.stderr.value() });
    if (e.process.status === "running") e.followers.add(connection);
    return reply;
  }

  /** rpc `process_unfollow` */
  unfollow(connection: string, id: string): Reply {
    this.entries.get(id)?.followers.delete(connection);
    return ok({ unfollowed: true });
  }

  /** A socket closed: it follows nothing. */
  left(connection: string): void {
    for (const e of this.entries.values()) e.followers.delete(connection);
  }

  /** `DELETE /processes/{id}`, rpc `process_kill`: `{killed}` once it ended (true for each request that found it running). */
  async kill(id: string): Promise<Reply> {
    const e = this.find(id);
    if (e.process.status !== "running") return ok({ killed: false });
    this.stop(e);
    await e.ended;
    return ok({ killed: true });
  }

  /** Every running process killed (their `exit` frames go out, `killed`); they stay listed (a restore). */
  async stopAll(): Promise<void> {
    const running = [...this.entries.values()].filter((e) => e.listed && e.process.status === "running");
    for (const e of running) this.stop(e);
    await Promise.all(running.map((e) => e.ended));
  }

  /** Cleanup: every process killed (their `exit` frames go out), then the list emptied. */
  async endAll(): Promise<void> {
    await this.stopAll();
    for (const e of this.entries.values()) if (e.listed) this.host.forget(e.process.id);
    for (const [id, e] of this.entries) if (e.listed) this.entries.delete(id);
  }

  /** The sandbox went away (its container slept): what ran there ended with it. */
  sandboxGone(): void {
    for (const e of this.entries.values()) {
      if (e.process.status === "running" && e.listed) this.finish(e, null, true);
      else if (e.process.status === "running") e.earlyExit = { code: null };
    }
  }

  private find(id: string): Entry {
    const e = this.entries.get(id);
    if (!e || !e.listed) {
      throw new ApiError(404, "no such process", { processId: [`no process ${JSON.stringify(id)} in this room`] });
    }
    return e;
  }

  private entry(process: Process, stdout = "", stderr = ""): Entry {
    let end = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    return {
      process,
      logs: { stdout: new LogTail(stdout), stderr: new LogTail(stderr) },
      listed: false,
      followers: new Set(),
      pending: { stdout: "", stderr: "" },
      lastFrame: { stdout: 0, stderr: 0 },
      timers: {},
      killing: false,
      killSent: false,
      ended,
      end,
    };
  }

  private stored(e: Entry): StoredProcess {
    return { process: { ...e.process }, stdout: e.logs.stdout.value(), stderr: e.logs.stderr.value() };
  }

  /** SIGTERM to its group, SIGKILL 2 s later; at most once. */
  private stop(e: Entry): void {
    if (e.killing || e.process.status !== "running") return;
    e.killing = true;
    void this.signal(e, "TERM");
    e.killTimer = setTimeout(() => {
      if (e.process.status !== "running") return;
      e.killSent = true;
      void this.signal(e, "KILL");
      // A sandbox that never reports the end: the room stops waiting.
      e.goneTimer = setTimeout(() => this.finish(e, null, true), GONE_AFTER_MS);
    }, KILL_AFTER_MS);
  }

  private async signal(e: Entry, signal: "TERM" | "KILL"): Promise<void> {
    try {
      await e.handle?.signal(signal);
    } catch (err) {
      console.error(`SIG${signal} to process ${e.process.id} failed: ${describe(err)}`);
    }
  }

  private output(e: Entry, stream: Stream, data: string): void {
    if (e.process.status !== "running" || data === "") return;
    e.logs[stream].append(data);
    if (e.followers.size === 0) return;
    e.pending[stream] += data;
    this.schedule(e, stream);
  }

  /** One frame per stream every COALESCE_MS at most, of at most FRAME_BYTES. */
  private schedule(e: Entry, stream: Stream): void {
    if (e.timers[stream] !== undefined || e.pending[stream] === "") return;
    const wait = e.lastFrame[stream] + COALESCE_MS - Date.now();
    if (wait <= 0) {
      this.flush(e, stream);
      return;
    }
    e.timers[stream] = setTimeout(() => {
      e.timers[stream] = undefined;
      this.flush(e, stream);
    }, wait);
  }

  private flush(e: Entry, stream: Stream): void {
    const [piece, rest] = splitAtBytes(e.pending[stream], FRAME_BYTES);
    e.pending[stream] = rest;
    if (piece !== "") this.toFollowers(e, processOutputFrame(stream, e.process.id, piece));
    e.lastFrame[stream] = Date.now();
    this.schedule(e, stream);
  }

  /** Everything pending, now (before a new follower's log, or the exit). */
  private flushAll(e: Entry): void {
    for (const stream of ["stdout", "stderr"] as const) {
      if (e.timers[stream] !== undefined) clearTimeout(e.timers[stream]);
      e.timers[stream] = undefined;
      let rest = e.pending[stream];
      e.pending[stream] = "";
      while (rest !== "") {
        const [piece, more] = splitAtBytes(rest, FRAME_BYTES);
        this.toFollowers(e, processOutputFrame(stream, e.process.id, piece));
        rest = more;
      }
      e.lastFrame[stream] = Date.now();
    }
  }

  private toFollowers(e: Entry, frame: string): void {
    for (const c of e.followers) this.host.send(c, frame);
  }

  private exited(e: Entry, code: number | null): void {
    if (!e.listed) {
      e.earlyExit ??= { code };
      return;
    }
    this.finish(e, code);
  }

  /**
   * It ended: its last output, then `exit` to everyone; the list and
   * storage updated. `gone`: the sandbox never said (its exit code is null).
   */
  private finish(e: Entry, code: number | null, gone = false): void {
    if (e.process.status !== "running") return;
    if (e.killTimer !== undefined) clearTimeout(e.killTimer);
    if (e.goneTimer !== undefined) clearTimeout(e.goneTimer);
    this.flushAll(e);
    e.followers.clear();
    const p = e.process;
    p.status = e.killing ? "killed" : "exited";
    // Killed where the sandbox could not say how: as the signal that ended it.
    p.exitCode = code ?? (e.killing && !gone ? (e.killSent ? KILLED : TERMINATED) : null);
    p.endedAt = Date.now();
    this.host.all(processExitFrame(p.id, p.status, p.exitCode));
    try {
      this.host.save(this.stored(e));
    } catch (err) {
      console.error(`storing process ${p.id} failed: ${describe(err)}`);
    }
    e.end();
    this.trim();
    this.host.changed(this.list());
    this.host.runningChanged(this.running());
  }

  /** Keeps the running ones and the last ENDED_PROCESSES_KEPT ended. */
  private trim(): void {
    const ended = [...this.entries.values()]
      .filter((e) => e.listed && e.process.status !== "running")
      .sort((a, b) => (a.process.endedAt ?? 0) - (b.process.endedAt ?? 0));
    for (const e of ended.slice(0, Math.max(0, ended.length - ENDED_PROCESSES_KEPT))) {
      this.entries.delete(e.process.id);
      this.host.forget(e.process.id);
    }
  }
}
