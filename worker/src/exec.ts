// Commands in the room's sandbox: announced when asked for, run one at a
// time in that order, their output streamed to the room as `duet_exec`
// frames, their end announced and recorded, with where the shell is now
// and the room's record when a person interrupted one or its shell was
// replaced (src/server/room/exec.rs).

import type { Limits } from "./env";
import { describe } from "./http";
import { recordText } from "./records";
import { STORED_OUTPUT_CAP, execCompleteFrame, execOutputFrame, execStartFrame, type ExecRecord, type ExecResult, type ExecSource, type RoomEvent, type Run, type ShellReason } from "./protocol";
import { capText, execId as execIdOf, isoTimestamp } from "./text";
import { SandboxStarting, type ExecOutcome, type RoomSandbox } from "./sandbox/types";

/** What the commands need of their room. */
export interface CommandHost {
  readonly limits: Limits;
  sandbox(): RoomSandbox;
  /** Bumped by cleanup: commands of an older generation are neither run nor recorded. */
  generation(): number;
  takeExecNumber(): number;
  broadcast(text: string): void;
  /** Keeps a command's record (unless a cleanup came since it started). */
  record(generation: number, record: ExecRecord): void;
  /**
   * Stores a command as it is announced, not ended yet (a restart leaves it
   * so: the object's next start ends it); then what it printed so far, in
   * batches; `unstarted`: it is asked for again, no record of it stays.
   */
  started(generation: number, record: ExecRecord): void;
  /** The room list (the lobby) hears of the started record stored at `ts`. */
  listed(generation: number, ts: number): void;
  printed(execId: string, printed: Printed, durationMs: number): void;
  unstarted(execId: string): void;
  /** Where the shell is, as last known. */
  shellCwd(): string;
  /** The shell is now in `cwd` (unless a cleanup came since the command started). */
  shellMoved(generation: number, cwd: string): void;
  /** Stores a record of the room (unless a cleanup came since the command started). */
  note(generation: number, event: RoomEvent, text: string): void;
  /** As `note`, for a record about the agent's running turn: stored after its reply. */
  noteAfterReply(generation: number, event: RoomEvent, text: string): void;
}

export interface CommandRequest {
  cmd: string;
  timeoutMs?: number;
  cwd?: string;
  env?: Record<string, string>;
  by: string;
  source: ExecSource;
  /** The socket that caused it (its rpc, or the message whose turn it is). */
  byConnection?: string;
  /** The name its `exec` gave it, for an `interrupt` by `clientId`. */
  clientId?: string;
  /** The agent's turn: when it is cancelled, its command is interrupted (or not started). */
  signal?: AbortSignal;
}

/** How a command ended. */
export interface CommandEnd {
  execId: string;
  cmd: string;
  ts: number;
  duration: number;
  /** The command ran. */
  outcome?: ExecOutcome;
  /** It could not run: why. */
  failure?: string;
  /** It could not run because the sandbox is starting: retry after this many seconds. */
  startingSecs?: number;
  record?: ExecRecord;
}

/** The text of a turn's command that was not started because the turn was cancelled. */
export const CANCELLED = "the agent's turn was cancelled";
/** How long the agent's command waits for a starting sandbox. */
const AGENT_START_WAIT_MS = 120_000;

const utf8 = new TextEncoder();

/** How often a running command's new output is written to storage (what a restart may lose of it). */
export const WRITE_EVERY_MS = 1000;

/** A running command's output as storage keeps it: the first `STORED_OUTPUT_CAP` bytes of each stream. */
export class Printed {
  stdout = "";
  stderr = "";
  truncated = false;
  private dirty = false;
  /** Bytes kept of each stream. */
  private readonly bytes = { stdout: 0, stderr: 0 };

  /** Keeps what of `data` fits; whether anything changed. */
  push(stream: "stdout" | "stderr", data: string): boolean {
    const [kept, cut] = capText(data, Math.max(0, STORED_OUTPUT_CAP - this.bytes[stream]));
    const changed = kept.length > 0 || (cut && !this.truncated);
    this.bytes[stream] += utf8.encode(kept).length;
    if (stream === "stdout") this.stdout += kept;
    else this.stderr += kept;
    this.truncated ||= cut;
    this.dirty ||= changed;
    return changed;
  }

  /** Whether it changed since the last call. */
  take(): boolean {
    const was = this.dirty;
    this.dirty = false;
    return was;
  }
}

/** The command running now. */
interface Running {
  execId: string;
  cmd: string;
  source: ExecSource;
  interrupted: boolean;
  clientId?: string;
}

export class Commands {
  private queue: Promise<unknown> = Promise.resolve();
  /** Commands announced and not ended yet. */
  private queued = 0;
  private running?: Running;
  /** Commands waiting behind another, by id, in the order they came; `withdrawn` once an interrupt named one (it never runs). */
  private readonly waiting = new Map<string, { cmd: string; source: CommandRequest["source"]; withdrawn: boolean; clientId?: string }>();

  constructor(private readonly host: CommandHost) {}

  /** Announces a command, queues it behind the others and resolves when it ended. */
  run(req: CommandRequest): Promise<CommandEnd> {
    const execId = execIdOf(this.host.takeExecNumber());
    this.host.broadcast(execStartFrame(execId, req.cmd, req.by, req.source, req.byConnection));
    const ts = Date.now();
    const generation = this.host.generation();
    this.host.started(generation, {
      execId,
      cmd: req.cmd,
      by: req.by,
      source: req.source,
      stdout: "",
      stderr: "",
      exitCode: null,
      duration: 0,
      ts,
    });
    // The room list hears of it once its call to the sandbox went out (execute's onSent), so that the lobby's
    // write never goes before the command (workerd runs every object on one thread); one that waits, at once.
    if (this.queued > 0) this.host.listed(generation, ts);
    this.waiting.set(execId, { cmd: req.cmd, source: req.source, withdrawn: false, clientId: req.clientId });
    this.queued++;
    const ended = this.queue.then(() => this.runOne(execId, req, ts, generation));
    this.queue = ended.catch(() => {}).finally(() => this.queued--);
    return ended;
  }

  /**
   * A person's interrupt: the command named by `execId`, else by the
   * `clientId` its `exec` gave (none when no command carries it: it
   * ended, or never came), else whichever runs (src/server/ops/interrupt.rs).
   */
  async interruptAsked(execId: string | undefined, clientId: string | undefined, by: string): Promise<{ interrupted: boolean; withdrawn?: true }> {
    if (execId === undefined && clientId !== undefined) {
      const named = this.named(clientId);
      if (named === undefined) return { interrupted: false };
      execId = named;
    }
    if (execId !== undefined && this.withdraw(execId, by)) return { interrupted: true, withdrawn: true };
    return { interrupted: await this.interrupt(execId, by) };
  }

  /**
   * SIGINT to the running command (`execId`, or whichever runs); whether
   * one was running. `by` is the person who asked, whose `interrupt`
   * record is stored before the answer (none: a cancelled turn's).
   */
  async interrupt(execId?: string, by?: string): Promise<boolean> {
    if (execId !== undefined && this.withdraw(execId, by)) return true;
    const running = this.running;
    if (!running || (execId !== undefined && execId !== running.execId)) return false;
    const generation = this.host.generation();
    running.interrupted = true;
    const done = await this.host.sandbox().interrupt();
    if (!done) running.interrupted = false;
    else if (by !== undefined) {
      const event: RoomEvent = { kind: "interrupt", by, execId: running.execId, cmd: running.cmd };
      // The agent's command: its record comes after the turn's reply, in the order things happened.
      if (running.source === "agent") this.host.noteAfterReply(generation, event, recordText(event));
      else this.host.note(generation, event, recordText(event));
    }
    return done;
  }

  /** The oldest command not ended whose `exec` gave it `clientId` (the running one first: it came before those that wait). */
  private named(clientId: string): string | undefined {
    if (this.running?.clientId === clientId) return this.running.execId;
    for (const [execId, waiting] of this.waiting) if (waiting.clientId === clientId) return execId;
    return undefined;
  }

  /**
   * Withdraws `execId` if it still waits behind another: it never runs
   * (duet serve's src/server/ops/interrupt.rs); `by`'s `interrupt` record
   * is stored. Whether it did.
   */
  private withdraw(execId: string, by?: string): boolean {
    const waiting = this.waiting.get(execId);
    if (!waiting || waiting.withdrawn) return false;
    waiting.withdrawn = true;
    if (by !== undefined) {
      const event: RoomEvent = { kind: "interrupt", by, execId, cmd: waiting.cmd };
      const generation = this.host.generation();
      if (waiting.source === "agent") this.host.noteAfterReply(generation, event, recordText(event));
      else this.host.note(generation, event, recordText(event));
    }
    return true;
  }

  /**
   * A restore: the running command is interrupted (no record of its own),
   * and so is each one queued before this call as it starts; resolves when
   * none is left.
   */
  async stopAll(): Promise<void> {
    for (;;) {
      const running = this.running;
      const queue = this.queue;
      if (!running) {
        await queue;
        if (!this.running && this.queue === queue) return;
        continue;
      }
      if (!running.interrupted) await this.interrupt(running.execId).catch(() => false);
      // A command that did not reach the shell yet is asked again.
      await Promise.race([queue, sleep(100)]);
    }
  }

  private async runOne(execId: string, req: CommandRequest, ts: number, generation: number): Promise<CommandEnd> {
    const end: CommandEnd = { execId, cmd: req.cmd, ts, duration: 0 };
    const withdrawn = this.waiting.get(execId)?.withdrawn === true;
    this.waiting.delete(execId);
    if (generation !== this.host.generation()) end.failure = "the sandbox is being destroyed";
    else if (req.signal?.aborted) end.failure = CANCELLED;
    else if (withdrawn) end.outcome = WITHDRAWN;
    else await this.execute(end, req, generation);
    if (!end.outcome) end.duration = Date.now() - ts;
    const o = end.outcome;
    const interrupted = o ? o.interrupted : false;
    const error = o ? o.error : end.failure;
    // A command that ran leaves the shell somewhere; one that could not start (or never did), where it was.
    const cwd = o && !withdrawn ? (o.cwd ?? this.host.shellCwd()) : undefined;
    this.host.broadcast(
      execCompleteFrame(execId, {
        exitCode: o ? o.exitCode : null,
        duration: end.duration,
        timedOut: o?.timedOut,
        truncated: o?.truncated,
        interrupted,
        error,
        cwd,
      }),
    );
    // A command that waits for a starting sandbox is asked for again: not a record.
    if (end.startingSecs !== undefined) this.host.unstarted(execId);
    else {
      const [stdout, cutOut] = capText(o?.stdout ?? "", STORED_OUTPUT_CAP);
      const [stderr, cutErr] = capText(o?.stderr ?? "", STORED_OUTPUT_CAP);
      end.record = {
        execId,
        cmd: req.cmd,
        by: req.by,
        source: req.source,
        stdout,
        stderr,
        exitCode: o ? o.exitCode : null,
        duration: end.duration,
        ts,
        truncated: Boolean(o?.truncated) || cutOut || cutErr,
        // What the live frame said, so that a reload reads the same.
        ...(error !== undefined && { error }),
        ...(o?.timedOut && { timedOut: true }),
        ...(interrupted && { interrupted: true }),
      };
      this.host.record(generation, end.record);
    }
    if (o && cwd !== undefined) {
      this.host.shellMoved(generation, cwd);
      const reason = shellReason(o);
      if (reason !== undefined) {
        const event: RoomEvent = { kind: "shell", by: req.by, reason, cwd, reset: reason === "exit", execId };
        // The agent's command: after the turn's reply, in the order things happened.
        if (req.source === "agent") this.host.noteAfterReply(generation, event, recordText(event, req.cmd));
        else this.host.note(generation, event, recordText(event, req.cmd));
      }
    }
    return end;
  }

  /** Runs the command in the sandbox; fills `end`. */
  private async execute(end: CommandEnd, req: CommandRequest, generation: number): Promise<void> {
    const { limits } = this.host;
    const running: Running = { execId: end.execId, cmd: req.cmd, source: req.source, interrupted: false, clientId: req.clientId };
    this.running = running;
    // The command may not have reached the sandbox's shell yet: ask again
    // until it stops or ends.
    const onAbort = async () => {
      while (this.running === running) {
        const stopped = await this.interrupt(end.execId).catch(() => false);
        if (stopped) return;
        await sleep(100);
      }
    };
    req.signal?.addEventListener("abort", onAbort);
    const started = Date.now();
    // Its output goes to the store as it comes, once a period, not once a line.
    const printed = new Printed();
    let writing: ReturnType<typeof setTimeout> | undefined;
    const write = () => {
      writing = undefined;
      if (printed.take()) this.host.printed(end.execId, printed, Date.now() - end.ts);
    };
    const print = (stream: "stdout" | "stderr", data: string) => {
      if (printed.push(stream, data) && writing === undefined) writing = setTimeout(write, WRITE_EVERY_MS);
      this.host.broadcast(execOutputFrame(stream, end.execId, data));
    };
    try {
      for (;;) {
        try {
          const outcome = await this.host.sandbox().exec({
            cmd: req.cmd,
            timeoutMs: Math.min(req.timeoutMs ?? limits.execTimeoutMs, limits.maxExecTimeoutMs),
            cwd: req.cwd,
            env: req.env && Object.keys(req.env).length > 0 ? req.env : undefined,
            outputCap: limits.outputCap,
            onStdout: (data) => print("stdout", data),
            onStderr: (data) => print("stderr", data),
            onSent: () => this.host.listed(generation, end.ts),
          });
          // An interrupt the room sent counts even if the sandbox did not say so.
          const interrupted = outcome.interrupted || (running.interrupted && outcome.exitCode !== 0);
          end.outcome = settled(outcome, interrupted);
          end.duration = outcome.durationMs;
          return;
        } catch (e) {
          // The agent's turn cannot answer 503: it waits for the sandbox instead.
          const wait =
            e instanceof SandboxStarting &&
            req.source === "agent" &&
            !req.signal?.aborted &&
            Date.now() - started < AGENT_START_WAIT_MS;
          if (wait) {
            await sleep(Math.max(1, e.retryAfterSecs) * 1000, req.signal);
            continue;
          }
          if (req.signal?.aborted) end.failure = CANCELLED;
          else if (e instanceof SandboxStarting) {
            end.failure = e.message;
            end.startingSecs = e.retryAfterSecs;
          } else end.failure = describe(e);
          return;
        }
      }
    } finally {
      if (writing !== undefined) clearTimeout(writing);
      req.signal?.removeEventListener("abort", onAbort);
      if (this.running === running) this.running = undefined;
    }
  }
}

/**
 * Why the shell was replaced after a command, if it was; not for an
 * interrupt or a cancel, which have their own records.
 */
function shellReason(o: ExecOutcome): ShellReason | undefined {
  if (o.interrupted) return undefined;
  if (o.shell === "exited") return "exit";
  // A timeout stops the command, not the shell: only a shell replaced at it is a record.
  if (o.shell === "stopped") return o.timedOut ? "timeout" : "stopped";
  return undefined;
}

/** Exit status of a command ended by its timeout (as `timeout(1)` answers). */
export const TIMED_OUT_EXIT = 124;
/** Exit status of a command ended by an interrupt or a cancel (128 + SIGINT). */
export const INTERRUPTED_EXIT = 130;

/** The outcome of a command withdrawn while it waited: it never ran. */
const WITHDRAWN: ExecOutcome = {
  exitCode: INTERRUPTED_EXIT,
  stdout: "",
  stderr: "",
  durationMs: 0,
  truncated: false,
  timedOut: false,
  interrupted: true,
};

/**
 * The outcome as docs/protocol.md states it, whatever the sandbox reported:
 * an interrupted (or cancelled) command answers 130, a timed-out one 124.
 */
export function settled(o: ExecOutcome, interrupted: boolean): ExecOutcome {
  if (interrupted) return { ...o, interrupted: true, timedOut: false, exitCode: INTERRUPTED_EXIT };
  if (o.timedOut) return { ...o, interrupted: false, exitCode: TIMED_OUT_EXIT };
  return { ...o, interrupted: false };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** The `ExecResult` of a command that ran. */
export function execResult(end: CommandEnd, o: ExecOutcome): ExecResult {
  return {
    success: o.exitCode === 0 && !o.timedOut && !o.interrupted,
    exitCode: o.exitCode,
    stdout: o.stdout,
    stderr: o.stderr,
    command: end.cmd,
    duration: end.duration,
    timestamp: isoTimestamp(end.ts),
    truncated: o.truncated,
    timedOut: o.timedOut,
    interrupted: o.interrupted,
    error: o.error,
  };
}

/** What the agent's reply keeps of a command: its stored outputs. */
export function runOf(end: CommandEnd): Run {
  const o = end.outcome;
  const r = end.record;
  if (!o || !r) return { cmd: end.cmd, stdout: "", stderr: "", exitCode: null, error: end.failure ?? CANCELLED };
  return {
    cmd: end.cmd,
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: o.exitCode,
    ...(o.error !== undefined && o.exitCode === null && { error: o.error }),
    ...(r.truncated && { truncated: true }),
  };
}
