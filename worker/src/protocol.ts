// Wire types and frames of docs/protocol.md, serialized in the field order
// `duet serve` writes them (src/protocol/mod.rs), so that both backends send the
// same bytes (its names and text rules: text.ts).

import type { RoomRole } from "./access";
import { approvalJson, type Approval, type Policy } from "./approvals";
import { toBase64 } from "./sandbox/bytes";
import { charCount, trim, unprintable } from "./text";

/** Messages kept in a room's state. */
export const STATE_MESSAGES = 100;
/** Commands kept in a room's state. */
export const STATE_EXECS = 20;
/** Bytes kept per stream of a stored output (`Run`, `ExecRecord`). */
export const STORED_OUTPUT_CAP = 16 * 1024;
/** Largest JSON body accepted. */
export const MAX_BODY = 1024 * 1024;
/** Largest file upload accepted. */
export const MAX_FILE_BODY = 64 * 1024 * 1024;
/** Longest chat message, in characters. */
export const MAX_TEXT_CHARS = 8_000;
/** Default and largest page of `/messages`. */
export const PAGE_DEFAULT = 50;
export const PAGE_MAX = 100;
/** The agent's name on the socket (`cf_agent_identity`). */
export const AGENT_NAME = "duet-agent";
/** The working directory of a fresh shell. */
export const WORKSPACE = "/workspace";

export type Role = "user" | "agent" | "system";
export type ExecSource = "user" | "agent";
/** Whom a person's message is for: the agent runs a turn for it, the room only reads it. */
export type Addressee = "agent" | "room";
/** Why a shell was replaced (a `shell` record's `reason`). */
export type ShellReason = "exit" | "timeout" | "stopped";

/** What a record (`role: "system"` with `event`) says happened; `by` is who did it. */
export type RoomEvent =
  | { kind: "cleanup"; by: string }
  | { kind: "cancel"; by: string; turnId: string }
  | { kind: "interrupt"; by: string; execId: string; cmd: string }
  | { kind: "upload"; by: string; path: string; size: number }
  | { kind: "rename"; by: string; from: string; to: string }
  | { kind: "shell"; by: string; reason: ShellReason; cwd: string; reset: boolean; execId?: string }
  | { kind: "delete"; by: string; path: string }
  | { kind: "checkpoint" | "restore"; by: string; checkpointId: string; name: string }
  | { kind: "fork"; by: string; from: string; to: string; checkpointId?: string }
  | { kind: "policy"; by: string; policy: Policy }
  | { kind: "process"; by: string; processId: string; name: string; cmd: string }
  | { kind: "push"; by: string; path: string; files: number; bytes: number; deleted: number; checkpointId: string | null }
  | { kind: "model"; by: string; model: string }
  | { kind: "edit"; by: string; turnId: string; path: string; added: number; removed: number };

/** What a turn cost (an agent message's `usage`): tokens summed over its model calls, estimated when the service gave none. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  rounds: number;
  estimated?: true;
}

/** The room state's `agent`: its model, those an owner may choose (the default first), the bounds of a turn. */
export interface AgentState {
  model: string | null;
  models: string[];
  steps: number;
  turnSecs: number;
  contextTokens: number;
}

export interface Run {
  cmd: string;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  error?: string;
  truncated?: boolean;
  /** Where the model asked for it: an offset in characters into the message's text (docs/protocol.md "Output blocks"). */
  at?: number;
}

export interface DuetMessage {
  id: string;
  role: Role;
  userId?: string;
  text: string;
  ts: number;
  runs?: Run[];
  /** The id the client gave a user message (`clientId`), if it gave one. */
  clientId?: string;
  /** User messages: whom they are for. */
  to?: Addressee;
  /** Records: what happened. */
  event?: RoomEvent;
  /** The agent message of a cancelled turn: who cancelled it. */
  cancelledBy?: string;
  /** Agent messages: what the turn cost. */
  usage?: Usage;
}

export interface ExecRecord {
  execId: string;
  cmd: string;
  by: string;
  source: ExecSource;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  duration: number;
  ts: number;
  truncated?: boolean;
  /** Why it has no exit code when it could not end by itself (the room's object or container restarted under it), or, beside one, what its `duet_exec complete` said happened to its shell. */
  error?: string;
  /** Stopped at its timeout, as its `duet_exec complete` said. */
  timedOut?: boolean;
  /** Interrupted, or its turn cancelled, as its `duet_exec complete` said. */
  interrupted?: boolean;
}

/** What a command still running when the room's object or its container restarted is stored with as its `error`. */
export const SERVER_STOPPED = "the server stopped while it ran";

export interface ExecResult {
  success: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  command: string;
  duration: number;
  timestamp: string;
  sessionId?: string;
  truncated?: boolean;
  timedOut?: boolean;
  interrupted?: boolean;
  error?: string;
}

export interface PresenceUser {
  id: string;
  name: string;
  since: number;
  role: RoomRole;
}

// Each `…Json` below builds the object in the wire's field order, leaving
// out what `duet serve` leaves out (absent options, false flags).

export function runJson(r: Run): object {
  return {
    cmd: r.cmd,
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: r.exitCode,
    ...(r.error !== undefined && { error: r.error }),
    ...(r.truncated && { truncated: true }),
    ...(r.at !== undefined && { at: r.at }),
  };
}

export function messageJson(m: DuetMessage): object {
  return {
    id: m.id,
    role: m.role,
    ...(m.userId !== undefined && { userId: m.userId }),
    text: m.text,
    ts: m.ts,
    ...(m.runs !== undefined && { runs: m.runs.map(runJson) }),
    ...(m.clientId !== undefined && { clientId: m.clientId }),
    ...(m.to !== undefined && { to: m.to }),
    ...(m.event !== undefined && { event: eventJson(m.event) }),
    ...(m.cancelledBy !== undefined && { cancelledBy: m.cancelledBy }),
    ...(m.usage !== undefined && { usage: usageJson(m.usage) }),
  };
}

/**
 * Each stored message's JSON text, made once: a stored message never
 * changes, and its text goes out in every answer to a message, every
 * full state and its `duet_message` frame.
 */
const messageTexts = new WeakMap<DuetMessage, string>();

export function messageText(m: DuetMessage): string {
  let text = messageTexts.get(m);
  if (text === undefined) messageTexts.set(m, (text = JSON.stringify(messageJson(m))));
  return text;
}

/** The JSON text of a list of stored messages. */
export function messagesText(messages: DuetMessage[]): string {
  return `[${messages.map(messageText).join(",")}]`;
}

/** A usage in the field order of src/protocol/agent.rs. */
export function usageJson(u: Usage): object {
  return {
    promptTokens: u.promptTokens,
    completionTokens: u.completionTokens,
    rounds: u.rounds,
    ...(u.estimated && { estimated: true }),
  };
}

/** An event with `kind` first and its fields in the order of docs/protocol.md. */
export function eventJson(e: RoomEvent): object {
  switch (e.kind) {
    case "cleanup":
      return { kind: e.kind, by: e.by };
    case "cancel":
      return { kind: e.kind, by: e.by, turnId: e.turnId };
    case "interrupt":
      return { kind: e.kind, by: e.by, execId: e.execId, cmd: e.cmd };
    case "upload":
      return { kind: e.kind, by: e.by, path: e.path, size: e.size };
    case "rename":
      return { kind: e.kind, by: e.by, from: e.from, to: e.to };
    case "shell":
      return {
        kind: e.kind,
        by: e.by,
        reason: e.reason,
        cwd: e.cwd,
        reset: e.reset,
        ...(e.execId !== undefined && { execId: e.execId }),
      };
    case "delete":
      return { kind: e.kind, by: e.by, path: e.path };
    case "edit":
      return { kind: e.kind, by: e.by, turnId: e.turnId, path: e.path, added: e.added, removed: e.removed };
    case "checkpoint":
    case "restore":
      return { kind: e.kind, by: e.by, checkpointId: e.checkpointId, name: e.name };
    case "fork":
      return {
        kind: e.kind,
        by: e.by,
        from: e.from,
        to: e.to,
        ...(e.checkpointId !== undefined && { checkpointId: e.checkpointId }),
      };
    case "policy":
      return { kind: e.kind, by: e.by, policy: e.policy };
    case "process":
      return { kind: e.kind, by: e.by, processId: e.processId, name: e.name, cmd: e.cmd };
    case "push":
      return { kind: e.kind, by: e.by, path: e.path, files: e.files, bytes: e.bytes, deleted: e.deleted, checkpointId: e.checkpointId };
    case "model":
      return { kind: e.kind, by: e.by, model: e.model };
  }
}

export function execRecordJson(r: ExecRecord): object {
  return {
    execId: r.execId,
    cmd: r.cmd,
    by: r.by,
    source: r.source,
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: r.exitCode,
    duration: r.duration,
    ts: r.ts,
    ...(r.truncated && { truncated: true }),
    ...(r.error !== undefined && { error: r.error }),
    ...(r.timedOut && { timedOut: true }),
    ...(r.interrupted && { interrupted: true }),
  };
}

export function execResultJson(r: ExecResult): object {
  return {
    success: r.success,
    exitCode: r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr,
    command: r.command,
    duration: r.duration,
    timestamp: r.timestamp,
    ...(r.sessionId !== undefined && { sessionId: r.sessionId }),
    ...(r.truncated && { truncated: true }),
    ...(r.timedOut && { timedOut: true }),
    ...(r.interrupted && { interrupted: true }),
    ...(r.error !== undefined && { error: r.error }),
  };
}

/** `{reply, error?, messages}`: the answer of `message`. */
/** The JSON text of a message's answer, `{reply, error?, messages}`. */
export function messageResponseText(reply: string | null, error: string | undefined, messages: DuetMessage[]): string {
  const head = JSON.stringify({ reply, ...(error !== undefined && { error }) });
  return `${head.slice(0, -1)},"messages":${messagesText(messages)}}`;
}

/** `shell` of the room state: where the next command runs. */
export interface ShellState {
  cwd: string;
}

/** `terminal` of the room state: the shared terminal that runs. */
export interface TerminalState {
  termId: string;
  cols: number;
  rows: number;
}

function terminalJson(t: TerminalState | null): object | null {
  return t === null ? null : { termId: t.termId, cols: t.cols, rows: t.rows };
}

// ---- Background processes and ports ----

export type ProcessStatus = "running" | "exited" | "killed";

/** A background process of the room's sandbox (src/protocol/process.rs `Process`). */
export interface Process {
  id: string;
  name: string;
  cmd: string;
  by: string;
  status: ProcessStatus;
  exitCode: number | null;
  startedAt: number;
  endedAt?: number;
}

/** A port something listens on inside the sandbox (`PortState`). */
export interface Port {
  port: number;
  path: string;
  url?: string;
}

/** Bytes of each stream a process's log keeps (its last ones). */
export const PROCESS_LOG_BYTES = 64 * 1024;
/** Ended processes the room keeps listing. */
export const ENDED_PROCESSES_KEPT = 20;

export function processJson(p: Process): object {
  return {
    id: p.id,
    name: p.name,
    cmd: p.cmd,
    by: p.by,
    status: p.status,
    exitCode: p.exitCode,
    startedAt: p.startedAt,
    ...(p.endedAt !== undefined && { endedAt: p.endedAt }),
  };
}

export function portJson(p: Port): object {
  return { port: p.port, path: p.path, ...(p.url !== undefined && { url: p.url }) };
}

/** The path of a port's HTTP preview (with its final slash). */
export function previewPath(room: string, port: number): string {
  return `/api/rooms/${room}/ports/${port}/`;
}

/** A process's name when none was given: its program's name (src/protocol/process.rs). */
export function defaultProcessName(cmd: string): string {
  const first = trim(cmd).split(/[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/)[0] ?? "";
  const base = first.slice(first.lastIndexOf("/") + 1);
  const name = Array.from(base)
    .filter((c) => !unprintable(c))
    .slice(0, 32)
    .join("");
  return name === "" ? "process" : name;
}

export function processStartFrame(p: Process): string {
  return JSON.stringify({ type: "duet_process", phase: "start", process: processJson(p) });
}

export function processOutputFrame(phase: "stdout" | "stderr", processId: string, data: string): string {
  return JSON.stringify({ type: "duet_process", phase, processId, data });
}

export function processExitFrame(processId: string, status: ProcessStatus, exitCode: number | null): string {
  return JSON.stringify({ type: "duet_process", phase: "exit", processId, status, exitCode });
}

// ---- Checkpoints (docs/protocol.md "Checkpoints, restore and fork") ----

/** A copy of the room's /workspace (src/protocol/checkpoint.rs `Checkpoint`). */
export interface Checkpoint {
  id: string;
  name: string;
  ts: number;
  by: string;
  size: number;
  auto: boolean;
  turnId?: string;
  expiresAt?: number;
}

/** Longest checkpoint name, in characters. */
export const CHECKPOINT_NAME_MAX = 64;

/** Why a checkpoint name is refused (`checkpoint_name_problem`), or undefined. */
export function checkpointNameProblem(name: string): string | undefined {
  if (name === "") return "must not be empty";
  if (!/^[A-Za-z0-9]/.test(name)) return "must start with a letter or a digit";
  if (charCount(name) > CHECKPOINT_NAME_MAX) return "must be at most 64 characters";
  if (!/^[A-Za-z0-9._-]*$/.test(name)) return "may hold only letters, digits, '.', '_' and '-'";
  return undefined;
}

export function checkpointJson(c: Checkpoint): object {
  return {
    id: c.id,
    name: c.name,
    ts: c.ts,
    by: c.by,
    size: c.size,
    auto: c.auto,
    ...(c.turnId !== undefined && { turnId: c.turnId }),
    ...(c.expiresAt !== undefined && { expiresAt: c.expiresAt }),
  };
}

/** One entry of a folder's listing (`DirEntry`). */
export interface DirEntry {
  name: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  mtime: number;
}

/** The fields of the room state besides the messages and commands. */
export interface StateFields {
  shell: ShellState;
  terminal: TerminalState | null;
  processes: Process[];
  ports: Port[];
  checkpoints: Checkpoint[];
  policy: Policy;
  approvals: Approval[];
  /** The server's entries, then the room's. */
  allow: string[];
  /** The agent's model, the models an owner may choose and a turn's bounds. */
  agent: AgentState;
}

const STATE_FIELDS = ["shell", "terminal", "processes", "ports", "checkpoints", "policy", "approvals", "allow", "agent"] as const;

function fieldJson<K extends keyof StateFields>(name: K, value: StateFields[K]): object | null {
  switch (name) {
    case "shell":
      return { cwd: (value as ShellState).cwd };
    case "terminal":
      return terminalJson(value as TerminalState | null);
    case "processes":
      return (value as Process[]).map(processJson);
    case "checkpoints":
      return (value as Checkpoint[]).map(checkpointJson);
    case "policy":
      return value as unknown as object;
    case "approvals":
      return (value as Approval[]).map(approvalJson);
    case "allow":
      return [...(value as string[])];
    case "agent": {
      const a = value as AgentState;
      return { model: a.model, models: [...a.models], steps: a.steps, turnSecs: a.turnSecs, contextTokens: a.contextTokens };
    }
    default:
      return (value as Port[]).map(portJson);
  }
}

/** `cf_agent_state` of the given lists and fields. */
export function stateFrame(messages: DuetMessage[], execs: ExecRecord[], fields: StateFields): string {
  const rest: Record<string, unknown> = { execs: execs.map(execRecordJson) };
  for (const name of STATE_FIELDS) rest[name] = fieldJson(name, fields[name]);
  // `{"execs":…}` after the messages' text, made once per message.
  return `{"type":"cf_agent_state","state":{"messages":${messagesText(messages)},${JSON.stringify(rest).slice(1)}}`;
}

/** `duet_state`: the new value of a field of the room state (deltas sockets). */
export function statePatchFrame(patch: Partial<StateFields>): string {
  const value: Record<string, unknown> = {};
  for (const name of STATE_FIELDS) {
    if (name in patch) value[name] = fieldJson(name, patch[name] as StateFields[typeof name]);
  }
  return JSON.stringify({ type: "duet_state", patch: value });
}

export function identityFrame(room: string): string {
  return JSON.stringify({ type: "cf_agent_identity", name: room, agent: AGENT_NAME });
}

export function presenceFrame(users: PresenceUser[]): string {
  return JSON.stringify({
    type: "duet_presence",
    users: users.map((u) => ({ id: u.id, name: u.name, since: u.since, role: u.role })),
  });
}

/** What changed in the presence list (docs/protocol.md "State deltas"), applied in order: `left`, `joined`, `changed`. */
export interface PresenceDelta {
  joined: PresenceUser[];
  left: string[];
  changed: PresenceUser[];
}

/** `duet_presence_delta` (deltas sockets, after the first `duet_presence`); empty fields are left out. */
export function presenceDeltaFrame(delta: PresenceDelta): string {
  const user = (u: PresenceUser) => ({ id: u.id, name: u.name, since: u.since, role: u.role });
  return JSON.stringify({
    type: "duet_presence_delta",
    ...(delta.joined.length > 0 && { joined: delta.joined.map(user) }),
    ...(delta.left.length > 0 && { left: delta.left }),
    ...(delta.changed.length > 0 && { changed: delta.changed.map(user) }),
  });
}

/** `duet_you`: this socket itself (its invite unless it came with the server's token). */
export function youFrame(id: string, name: string, role: RoomRole, inviteId?: string): string {
  return JSON.stringify({ type: "duet_you", id, name, role, ...(inviteId !== undefined && { inviteId }) });
}

/** `duet_typing`; `termId` when the typing is into the shared terminal. */
export function typingFrame(id: string, name: string, termId?: string): string {
  return JSON.stringify({ type: "duet_typing", id, name, ...(termId !== undefined && { termId }) });
}

// ---- The shared terminal (`duet_term`) ----

export function termOpenFrame(termId: string, by: string, cols: number, rows: number): string {
  return JSON.stringify({ type: "duet_term", phase: "open", termId, by, cols, rows });
}

/** Output bytes, base64; `snapshot`: a redraw of the whole screen. */
export function termDataFrame(termId: string, data: Uint8Array, snapshot: boolean): string {
  return JSON.stringify({ type: "duet_term", phase: "data", termId, data: toBase64(data), ...(snapshot && { snapshot: true }) });
}

export function termResizeFrame(termId: string, cols: number, rows: number): string {
  return JSON.stringify({ type: "duet_term", phase: "resize", termId, cols, rows });
}

/** `reason`: why, when it ended unexpectedly (its screen or its connection to the sandbox failed). */
export function termExitFrame(termId: string, exitCode: number | null, reason?: string): string {
  return JSON.stringify({ type: "duet_term", phase: "exit", termId, exitCode, ...(reason === undefined ? {} : { reason }) });
}


export function errorFrame(error: string): string {
  return JSON.stringify({ type: "duet_error", error });
}

/** The answer to a frame over its socket's rate: it was dropped. */
export function rateLimitedFrame(retryAfterMs: number): string {
  return JSON.stringify({ type: "duet_error", error: "rate limited", retryAfterMs });
}

export function messageFrame(m: DuetMessage): string {
  return `{"type":"duet_message","message":${messageText(m)}}`;
}

export function cleanupFrame(by: string): string {
  return JSON.stringify({ type: "duet_cleanup", by });
}

export const READONLY_FRAME = JSON.stringify({ type: "cf_agent_state_error", error: "Connection is readonly" });

export type AiPhase = "start" | "delta" | "end" | "error";

export function aiFrame(phase: AiPhase, turnId: string, text?: string, error?: string, byConnection?: string): string {
  return JSON.stringify({
    type: "duet_ai",
    phase,
    turnId,
    ...(text !== undefined && { text }),
    ...(error !== undefined && { error }),
    ...(byConnection !== undefined && { byConnection }),
  });
}

export function execStartFrame(execId: string, cmd: string, by: string, source: ExecSource, byConnection?: string): string {
  return JSON.stringify({
    type: "duet_exec",
    phase: "start",
    execId,
    cmd,
    by,
    source,
    ...(byConnection !== undefined && { byConnection }),
  });
}

export function execOutputFrame(phase: "stdout" | "stderr", execId: string, data: string): string {
  return JSON.stringify({ type: "duet_exec", phase, execId, data });
}

export interface Completion {
  exitCode: number | null;
  duration: number;
  timedOut?: boolean;
  truncated?: boolean;
  interrupted?: boolean;
  error?: string;
  /** The shell's working directory after the command (absent when it could not start). */
  cwd?: string;
}

export function execCompleteFrame(execId: string, c: Completion): string {
  return JSON.stringify({
    type: "duet_exec",
    phase: "complete",
    execId,
    exitCode: c.exitCode,
    duration: c.duration,
    ...(c.timedOut && { timedOut: true }),
    ...(c.truncated && { truncated: true }),
    ...(c.interrupted && { interrupted: true }),
    ...(c.error !== undefined && { error: c.error }),
    ...(c.cwd !== undefined && { cwd: c.cwd }),
  });
}
