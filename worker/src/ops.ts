// The room operations shared by HTTP and the socket's `rpc`, each parsed
// from a JSON object field by field so that every bad field is named, with
// the messages of `duet serve` (src/server/ops/).

import { parseRole, type RoomRole } from "./access";
import { collapse, parsePolicy, type Policy } from "./approvals";
import { ApiError, addDetail, isObject, type Details, type JsonObject } from "./http";
import type { TermSize, WorkspaceCopy } from "./sandbox/types";
import { clampSize, sizeProblems } from "./terminal";
import {
  MAX_TEXT_CHARS,
  ROOM_RULE,
  charCount,
  checkpointNameProblem,
  isControl,
  nameProblem,
  trim,
  validRoomId,
  type Addressee,
} from "./protocol";

/**
 * A room operation. `user` is who asks (`userId`, or the socket's `user`);
 * `connection` the socket's id (`_pk`) when a socket asked.
 */
export type Op =
  | { kind: "message"; text: string; user?: string; clientId?: string; to: Addressee; connection?: string }
  | {
      kind: "exec";
      cmd: string;
      timeoutMs?: number;
      cwd?: string;
      env: Record<string, string>;
      user?: string;
      connection?: string;
    }
  | { kind: "interrupt"; execId?: string; user?: string }
  | { kind: "cancel"; turnId?: string; user?: string }
  | { kind: "cleanup"; user?: string }
  /** rpc only: the socket's name changes from `user` to `name`. */
  | { kind: "rename"; name: string; user?: string }
  /** rpc only: the shared terminal (src/terminal.ts); `size` is this socket's window. */
  | { kind: "term_open"; size?: TermSize; user?: string }
  | { kind: "term_detach"; termId: string; user?: string }
  | { kind: "term_close"; termId: string; user?: string }
  /** Background processes (src/processes.ts): `POST /processes`, rpc `process_start`. */
  | { kind: "process_start"; cmd: string; name?: string; user?: string }
  /** `DELETE /processes/{id}`, rpc `process_kill`. */
  | { kind: "process_kill"; processId: string; user?: string }
  /** rpc only: this socket's follow of a process's output. */
  | { kind: "process_follow" | "process_unfollow"; processId: string; user?: string }
  /** HTTP only: `GET /processes`, `GET /processes/{id}`, `GET /processes/{id}/logs`, `GET /ports`. */
  | { kind: "process_list" | "ports"; user?: string }
  | { kind: "process_get" | "process_logs"; processId: string; user?: string }
  /** From files.ts once a `PUT /files/{path}` wrote the file: its record. */
  | { kind: "upload"; path: string; size: number; user?: string }
  /** From files.ts once a `DELETE /files/{path}` deleted it: its record. */
  | { kind: "deleted"; path: string; user?: string }
  /** Checkpoints (src/checkpoints.ts): `POST /checkpoints`, rpc `checkpoint_create`. */
  | { kind: "checkpoint_create"; name?: string; user?: string }
  /** `POST /checkpoints/{id}/restore`, `DELETE /checkpoints/{id}`, and their rpcs. */
  | { kind: "checkpoint_restore" | "checkpoint_delete"; checkpointId: string; user?: string }
  /** HTTP only: `GET /checkpoints`. */
  | { kind: "checkpoint_list"; user?: string }
  /** `POST /fork`, rpc `fork`: room `to` starts from this room's workspace (or a checkpoint's). */
  | { kind: "fork"; to: string; checkpointId?: string; user?: string }
  /**
   * Internal, from the room being forked to the new one (room.ts): `reserve`
   * its name (409 when it exists), `fill` it from `copy` (its `fork`
   * record), or `release` a reservation whose copy failed.
   */
  | { kind: "fork_into"; phase: "reserve" | "fill" | "release"; from: string; by: string; checkpointId?: string; copy?: WorkspaceCopy; user?: string }
  /**
   * Invites (src/invites.ts): `POST /invites`, rpc `invite_create`; `link`
   * is how the caller reached the backend (`http://HOST:PORT`), for `url`.
   */
  | { kind: "invite_create"; role: RoomRole; expiresIn: number; name?: string; link?: string; user?: string }
  /** HTTP only: `GET /invites`. */
  | { kind: "invite_list"; user?: string }
  /** `DELETE /invites/{id}`, rpc `invite_revoke`. */
  | { kind: "invite_revoke"; inviteId: string; user?: string }
  /** `POST /invites/{id}/role`, rpc `set_role`. */
  | { kind: "set_role"; inviteId: string; role: RoomRole; user?: string }
  /** The approval policy (src/approvals.ts): `POST /policy`, rpc `set_policy`. */
  | { kind: "set_policy"; policy: Policy; allow?: string[]; user?: string }
  /** `POST /approve`, rpc `approve`. */
  | { kind: "approve"; approvalId: string; approved: boolean; user?: string };

/** The methods of `rpc` (the HTTP paths' operations are in index.ts). */
export const METHODS = [
  "message",
  "exec",
  "interrupt",
  "cancel",
  "cleanup",
  "rename",
  "term_open",
  "term_detach",
  "term_close",
  "process_start",
  "process_kill",
  "process_follow",
  "process_unfollow",
  "checkpoint_create",
  "checkpoint_restore",
  "checkpoint_delete",
  "fork",
  "invite_create",
  "invite_revoke",
  "set_role",
  "set_policy",
  "approve",
  // HTTP only (index.ts): not an rpc method.
  "invite_list",
] as const;
export type Method = (typeof METHODS)[number];

/** Methods that have an HTTP route but no rpc. */
const HTTP_ONLY: readonly Method[] = ["invite_list"];

export function isMethod(name: string): name is Method {
  return (METHODS as readonly string[]).includes(name) && !HTTP_ONLY.includes(name as Method);
}

/** The longest an invite may last, in seconds (a year), and how long one lasts unless asked. */
export const MAX_INVITE_SECS = 365 * 86_400;
export const DEFAULT_INVITE_SECS = 86_400;
/** Most entries of a room's allow list, and the longest entry. */
const ALLOW_ENTRIES = 64;
const ALLOW_ENTRY_CHARS = 200;

/** Problems of a room id, as `details`. */
export function roomDetails(room: string): Details {
  const details: Details = {};
  if (!validRoomId(room)) addDetail(details, "room", ROOM_RULE);
  return details;
}

/** Field-by-field reader of a request object that collects every problem. */
class Fields {
  constructor(
    private readonly obj: JsonObject,
    readonly details: Details,
  ) {}

  /** The field's value; JSON `null` counts as absent. */
  get(name: string): unknown {
    if (!Object.prototype.hasOwnProperty.call(this.obj, name)) return undefined;
    const v = this.obj[name];
    return v === null ? undefined : v;
  }

  problem(name: string, message: string): void {
    addDetail(this.details, name, message);
  }

  string(name: string): string | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    if (typeof v === "string") return v;
    this.problem(name, "must be a string");
    return undefined;
  }

  requiredText(name: string): string | undefined {
    if (this.get(name) === undefined) {
      this.problem(name, "is required");
      return undefined;
    }
    const s = this.string(name);
    if (s === undefined) return undefined;
    if (trim(s) === "") {
      this.problem(name, "must not be empty");
      return undefined;
    }
    return s;
  }

  /** A person's name (`userId`), trimmed. */
  name(name: string): string | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const s = trim(raw);
    const p = nameProblem(s);
    if (p) {
      this.problem(name, p);
      return undefined;
    }
    return s;
  }

  plainString(name: string): string | undefined {
    const s = this.string(name);
    if (s === undefined) return undefined;
    if (s.includes("\0")) {
      this.problem(name, "must not contain NUL characters");
      return undefined;
    }
    return s;
  }
}

/** Whether `key` is an environment variable name. */
function envKeyOk(key: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key);
}

/** A string as Rust's `{:?}` shows it (close enough: JSON's quoting). */
function quoted(s: string): string {
  return JSON.stringify(s);
}

/**
 * Parses operation `method` from `obj`. `details` holds problems found
 * before (the room id); `defaultUser` is the socket's `user`. Throws the
 * 400 naming every bad field.
 */
export function parseOp(method: Method, obj: JsonObject, details: Details = {}, defaultUser?: string): Op {
  const f = new Fields(obj, details);
  const user = f.name("userId") ?? defaultUser;
  let op: Op | undefined;
  switch (method) {
    case "message": {
      // Stored trimmed; the limit counts what is stored.
      const raw = f.requiredText("text");
      const text = raw === undefined ? undefined : trim(raw);
      if (text !== undefined && charCount(text) > MAX_TEXT_CHARS) {
        f.problem("text", "must be at most 8000 characters");
      }
      const clientId = f.string("clientId");
      const bad = clientId !== undefined && (clientId === "" || charCount(clientId) > 64 || Array.from(clientId).some(isControl));
      if (bad) f.problem("clientId", "must be 1-64 printable characters");
      const to = addressee(f);
      if (text !== undefined && to !== undefined) {
        op = { kind: "message", text, user, ...(clientId !== undefined && { clientId }), to };
      }
      break;
    }
    case "exec":
      op = exec(f, user);
      break;
    case "interrupt":
      op = { kind: "interrupt", execId: f.string("execId"), user };
      break;
    case "cancel":
      op = { kind: "cancel", turnId: f.string("turnId"), user };
      break;
    case "cleanup":
      op = { kind: "cleanup", user };
      break;
    case "rename": {
      if (f.get("name") === undefined) f.problem("name", "is required");
      const name = f.name("name");
      if (name !== undefined) op = { kind: "rename", name, user };
      break;
    }
    case "term_open": {
      const cols = f.get("cols");
      const rows = f.get("rows");
      if (cols === undefined && rows === undefined) {
        op = { kind: "term_open", user };
        break;
      }
      // Both or neither: a size with one half missing is refused by its missing half.
      for (const [field, problem] of sizeProblems(cols, rows)) f.problem(field, problem);
      op = { kind: "term_open", size: clampSize(cols, rows), user };
      break;
    }
    case "term_detach":
    case "term_close": {
      const termId = f.get("termId");
      if (typeof termId === "string" && termId !== "") op = { kind: method, termId, user };
      else f.problem("termId", "must be a terminal's id");
      break;
    }
    case "process_start": {
      const raw = f.requiredText("cmd");
      const cmd = raw === undefined ? undefined : trim(raw);
      if (cmd?.includes("\0")) f.problem("cmd", "must not contain NUL characters");
      const name = f.name("name");
      if (cmd !== undefined) op = { kind: "process_start", cmd, ...(name !== undefined && { name }), user };
      break;
    }
    case "process_kill":
    case "process_follow":
    case "process_unfollow": {
      const raw = f.requiredText("processId");
      if (raw !== undefined) op = { kind: method, processId: trim(raw), user };
      break;
    }
    case "checkpoint_create": {
      const name = f.string("name");
      const problem = name === undefined ? undefined : checkpointNameProblem(name);
      if (problem) f.problem("name", problem);
      op = { kind: method, ...(name !== undefined && { name }), user };
      break;
    }
    case "checkpoint_restore":
    case "checkpoint_delete": {
      const raw = f.requiredText("checkpointId");
      if (raw !== undefined) op = { kind: method, checkpointId: trim(raw), user };
      break;
    }
    case "fork": {
      if (f.get("to") === undefined) f.problem("to", "is required");
      const to = f.string("to");
      if (to !== undefined && !validRoomId(to)) f.problem("to", ROOM_RULE);
      const raw = f.string("checkpointId");
      if (raw !== undefined && trim(raw) === "") f.problem("checkpointId", "must not be empty");
      const checkpointId = raw === undefined ? undefined : trim(raw);
      if (to !== undefined) op = { kind: method, to, ...(checkpointId !== undefined && { checkpointId }), user };
      break;
    }
    case "invite_create": {
      const role = requiredRole(f);
      let expiresIn: number | undefined = DEFAULT_INVITE_SECS;
      const e = f.get("expiresIn");
      if (e !== undefined) {
        expiresIn = typeof e === "number" && Number.isInteger(e) && e >= 1 && e <= MAX_INVITE_SECS ? e : undefined;
        if (expiresIn === undefined) f.problem("expiresIn", "must be a whole number of seconds from 1 to 31536000");
      }
      const name = f.name("name");
      if (role !== undefined && expiresIn !== undefined) op = { kind: method, role, expiresIn, ...(name !== undefined && { name }), user };
      break;
    }
    case "invite_list":
      op = { kind: method, user };
      break;
    case "invite_revoke": {
      const raw = f.requiredText("inviteId");
      if (raw !== undefined) op = { kind: method, inviteId: trim(raw), user };
      break;
    }
    case "set_role": {
      const raw = f.requiredText("inviteId");
      const role = requiredRole(f);
      if (raw !== undefined && role !== undefined) op = { kind: method, inviteId: trim(raw), role, user };
      break;
    }
    case "set_policy": {
      let policy: Policy | undefined;
      if (f.get("policy") === undefined) f.problem("policy", "is required");
      else {
        policy = parsePolicy(f.get("policy"));
        if (policy === undefined) f.problem("policy", "must be auto, ask or off");
      }
      const allow = allowList(f);
      if (policy !== undefined && allow !== null) op = { kind: method, policy, ...(allow !== undefined && { allow }), user };
      break;
    }
    case "approve": {
      const raw = f.requiredText("approvalId");
      const approved = f.get("approved");
      if (approved === undefined) f.problem("approved", "is required");
      else if (typeof approved !== "boolean") f.problem("approved", "must be true or false");
      if (raw !== undefined && typeof approved === "boolean") op = { kind: method, approvalId: trim(raw), approved, user };
      break;
    }
  }
  if (op === undefined || Object.keys(f.details).length > 0) throw ApiError.invalid(f.details);
  return op;
}

/** A required `role`. */
function requiredRole(f: Fields): RoomRole | undefined {
  if (f.get("role") === undefined) {
    f.problem("role", "is required");
    return undefined;
  }
  const role = parseRole(f.get("role"));
  if (role === undefined) f.problem("role", "must be owner, writer or viewer");
  return role;
}

/** `allow`: absent (undefined), an array of commands (white space collapsed), or refused (null). */
function allowList(f: Fields): string[] | undefined | null {
  const value = f.get("allow");
  if (value === undefined) return undefined;
  const entries = Array.isArray(value) && value.every((e) => typeof e === "string") ? value.map((e) => collapse(e as string)) : undefined;
  if (entries && entries.length <= ALLOW_ENTRIES && entries.every((e) => e !== "" && charCount(e) <= ALLOW_ENTRY_CHARS)) return entries;
  f.problem("allow", "must be an array of at most 64 commands, each 1 to 200 characters");
  return null;
}

/** Whom a message is for: `to`, "agent" when absent; undefined when it is neither. */
function addressee(f: Fields): Addressee | undefined {
  const to = f.get("to");
  if (to === undefined) return "agent";
  if (to === "agent" || to === "room") return to;
  f.problem("to", 'must be "agent" or "room"');
  return undefined;
}

function exec(f: Fields, user: string | undefined): Op | undefined {
  const cmd = f.requiredText("cmd");
  if (cmd?.includes("\0")) f.problem("cmd", "must not contain NUL characters");
  let timeoutMs: number | undefined;
  const t = f.get("timeoutMs");
  if (t !== undefined) {
    if (typeof t === "number" && Number.isInteger(t) && t > 0 && t <= 18446744073709551615) timeoutMs = t;
    else f.problem("timeoutMs", "must be a positive whole number of milliseconds");
  }
  const cwd = f.plainString("cwd");
  if (cwd === "") f.problem("cwd", "must not be empty");
  const env: Record<string, string> = {};
  const e = f.get("env");
  if (e !== undefined) {
    if (isObject(e)) {
      // serde_json's map iterates its keys in byte order.
      for (const key of Object.keys(e).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
        const value = e[key];
        if (!envKeyOk(key)) f.problem("env", `${quoted(key)} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`);
        if (typeof value === "string" && !value.includes("\0")) env[key] = value;
        else if (typeof value === "string") f.problem("env", `${key}: must not contain NUL characters`);
        else f.problem("env", `${key}: must be a string`);
      }
    } else {
      f.problem("env", "must be an object of strings");
    }
  }
  if (cmd === undefined) return undefined;
  return { kind: "exec", cmd, timeoutMs, cwd, env, user };
}

/** An rpc method that is none of METHODS. */
export class UnknownMethod extends Error {
  constructor(readonly method: string) {
    super(`unknown method ${quoted(method)}`);
  }
}

/** The operation of an rpc frame from socket `connection` whose name is `user`; throws its failure. */
export function rpcOp(frame: JsonObject, user?: string, connection?: string): Op {
  const method = frame.method;
  if (typeof method !== "string") throw ApiError.field("method", "must be a string");
  let obj: JsonObject = {};
  const args = frame.args;
  if (args !== undefined && args !== null) {
    if (!Array.isArray(args)) throw ApiError.field("args", "must be an array");
    const first = args[0];
    if (first !== undefined && first !== null) {
      if (!isObject(first)) throw ApiError.field("args", "args[0] must be an object");
      obj = first;
    }
  }
  if (!isMethod(method)) throw new UnknownMethod(method);
  const op = parseOp(method, obj, {}, user);
  // Only the socket's own name changes; `userId` does not pick whose.
  if (op.kind === "rename") op.user = user;
  if ((op.kind === "message" || op.kind === "exec") && connection !== undefined) op.connection = connection;
  return op;
}
