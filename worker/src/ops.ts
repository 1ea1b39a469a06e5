// The room operations: one table (OPERATIONS, as docs/operations.json
// lists them) gives each its rpc method, its HTTP route (or none: the
// socket's own), the actions of the role table it may be, and its parser,
// which reads a JSON object field by field with the messages of `duet
// serve` (src/server/ops/). index.ts routes from it, agent.ts dispatches
// the socket's rpc by it, room.ts checks roles by it (opAction).

import type { Action, RoomRole } from "./access";
import { parsePolicy, type Policy } from "./approvals";
import { Fields, envKeyOk, quoted } from "./fields";
import { ApiError, addDetail, isObject, type Details, type JsonObject } from "./http";
import type { TermSize, WorkspaceCopy } from "./sandbox/types";
import { clampSize, sizeProblems } from "./terminal";
import { MAX_TEXT_CHARS, checkpointNameProblem, type Addressee } from "./protocol";
import { ROOM_RULE, charCount, trim, validRoomId } from "./text";

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
      /** Names it for an `interrupt` until it ends (a client with no socket learns no `execId`). */
      clientId?: string;
      user?: string;
      connection?: string;
    }
  | { kind: "interrupt"; execId?: string; clientId?: string; user?: string }
  | { kind: "cancel"; turnId?: string; user?: string }
  | { kind: "cleanup"; user?: string }
  /** rpc only: the socket's name changes from `user` to `name`. */
  | { kind: "rename"; name: string; user?: string }
  /** rpc only: the shared terminal (src/terminal.ts); `size` is this socket's window. */
  | { kind: "term_open"; size?: TermSize; screen?: boolean; user?: string }
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
  /** From archive.ts before a push: the bytes the room's disk has free (DUET_DISK_MB less /workspace and the checkpoints). */
  | { kind: "disk_free"; user?: string }
  /** From archive.ts once a push was unpacked: its `push-N` checkpoint and its record; answers the push's body. */
  | { kind: "pushed"; path: string; files: number; bytes: number; deleted: number; user?: string }
  /** From archive.ts for a diff: the checkpoint to compare with (`from`, an id or a name; absent: the newest push) and its copy. */
  | { kind: "diff_base"; from?: string; user?: string }
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
  | { kind: "approve"; approvalId: string; approved: boolean; user?: string }
  /** `POST /ticket`, rpc `ticket`: a socket ticket for the caller (tickets.ts). */
  | { kind: "ticket"; user?: string }
  /** The agent's model (src/usage.ts): `POST /model`, rpc `set_model`. */
  | { kind: "set_model"; model: string; user?: string };

/** An HTTP route under `/api/rooms/{room}`: verb and path, `{id}` one segment (docs/operations.json's `route`). */
export type Route = `${"GET" | "POST" | "DELETE"} /${string}`;

/** The field a route's `{id}` segment fills. */
type IdField = "processId" | "checkpointId" | "inviteId";

/** A room operation as the table declares it. */
interface Operation {
  /** Its HTTP route; null: the socket's own (rpc only, agent.ts answers it). */
  route: Route | null;
  /** What it may be, as the role table (access.ts) names it. */
  actions: readonly Action[];
  /** Which of `actions` an operation is, when it may be more than one. */
  which?: (op: Op, terminalRuns: boolean) => number;
  /** The field the route's `{id}` fills (and a DELETE's whole request). */
  id?: IdField;
  /** The socket's rate bucket it counts in. */
  counts?: "messages" | "commands";
  /** Reads the request object (`user`: who asks); undefined when a field was bad (named in `f`). */
  parse: (f: Fields, user: string | undefined) => Op | undefined;
}

/** Every room operation: its rpc method (the key), route, actions and parser. */
export const OPERATIONS = {
  message: {
    route: "POST /message",
    actions: ["chatToRoom", "askAgent"],
    which: (op) => (op.kind === "message" && op.to === "room" ? 0 : 1),
    counts: "messages",
    parse: (f, user) => {
      // Stored trimmed; the limit counts what is stored.
      const raw = f.requiredText("text");
      const text = raw === undefined ? undefined : trim(raw);
      if (text !== undefined && charCount(text) > MAX_TEXT_CHARS) {
        f.problem("text", "must be at most 8000 characters");
      }
      const clientId = f.clientId("clientId");
      const to = f.addressee();
      if (text === undefined || to === undefined) return undefined;
      return { kind: "message", text, user, ...(clientId !== undefined && { clientId }), to };
    },
  },
  exec: { route: "POST /sandbox/exec", actions: ["runCommand"], counts: "commands", parse: exec },
  interrupt: {
    route: "POST /sandbox/interrupt",
    actions: ["interrupt"],
    parse: (f, user) => {
      const clientId = f.clientId("clientId");
      return { kind: "interrupt", execId: f.string("execId"), ...(clientId !== undefined && { clientId }), user };
    },
  },
  cancel: { route: "POST /cancel", actions: ["cancel"], parse: (f, user) => ({ kind: "cancel", turnId: f.string("turnId"), user }) },
  cleanup: { route: "POST /cleanup", actions: ["cleanup"], parse: (_f, user) => ({ kind: "cleanup", user }) },
  rename: {
    route: null,
    actions: ["rename"],
    // A rename stores a record: it counts as a message.
    counts: "messages",
    parse: (f, user) => {
      if (f.get("name") === undefined) f.problem("name", "is required");
      const name = f.name("name");
      return name === undefined ? undefined : { kind: "rename", name, user };
    },
  },
  term_open: {
    route: null,
    actions: ["watch", "openTerminal"],
    // Attaching to a running terminal is watching it.
    which: (_op, terminalRuns) => (terminalRuns ? 0 : 1),
    parse: (f, user) => {
      // `screen: true`: screen frames instead of data frames.
      const screenArg = f.get("screen");
      if (screenArg !== undefined && typeof screenArg !== "boolean") f.problem("screen", "must be true or false");
      const screen = screenArg === true ? { screen: true } : {};
      if (f.get("cols") === undefined && f.get("rows") === undefined) return { kind: "term_open", ...screen, user };
      // Both or neither: a size with one half missing is refused by its missing half.
      for (const [field, problem] of sizeProblems(f.obj)) f.problem(field, problem);
      return { kind: "term_open", size: clampSize(f.obj), ...screen, user };
    },
  },
  term_detach: { route: null, actions: ["watch"], parse: (f, user) => terminalOp("term_detach", f, user) },
  term_close: { route: null, actions: ["closeTerminal"], parse: (f, user) => terminalOp("term_close", f, user) },
  process_start: {
    route: "POST /processes",
    actions: ["startProcess"],
    parse: (f, user) => {
      const raw = f.requiredText("cmd");
      const cmd = raw === undefined ? undefined : trim(raw);
      if (cmd?.includes("\0")) f.problem("cmd", "must not contain NUL characters");
      const name = f.name("name");
      return cmd === undefined ? undefined : { kind: "process_start", cmd, ...(name !== undefined && { name }), user };
    },
  },
  process_kill: { route: "DELETE /processes/{id}", id: "processId", actions: ["killProcess"], parse: (f, user) => processOp("process_kill", f, user) },
  process_follow: { route: null, actions: ["watch"], parse: (f, user) => processOp("process_follow", f, user) },
  process_unfollow: { route: null, actions: ["watch"], parse: (f, user) => processOp("process_unfollow", f, user) },
  checkpoint_create: {
    route: "POST /checkpoints",
    actions: ["takeCheckpoint"],
    parse: (f, user) => {
      const name = f.string("name");
      const problem = name === undefined ? undefined : checkpointNameProblem(name);
      if (problem) f.problem("name", problem);
      return { kind: "checkpoint_create", ...(name !== undefined && { name }), user };
    },
  },
  checkpoint_restore: {
    route: "POST /checkpoints/{id}/restore",
    id: "checkpointId",
    actions: ["restoreCheckpoint"],
    parse: (f, user) => checkpointOp("checkpoint_restore", f, user),
  },
  checkpoint_delete: {
    route: "DELETE /checkpoints/{id}",
    id: "checkpointId",
    actions: ["deleteCheckpoint"],
    parse: (f, user) => checkpointOp("checkpoint_delete", f, user),
  },
  fork: {
    route: "POST /fork",
    actions: ["fork"],
    parse: (f, user) => {
      if (f.get("to") === undefined) f.problem("to", "is required");
      const to = f.string("to");
      if (to !== undefined && !validRoomId(to)) f.problem("to", ROOM_RULE);
      const raw = f.string("checkpointId");
      if (raw !== undefined && trim(raw) === "") f.problem("checkpointId", "must not be empty");
      const checkpointId = raw === undefined ? undefined : trim(raw);
      return to === undefined ? undefined : { kind: "fork", to, ...(checkpointId !== undefined && { checkpointId }), user };
    },
  },
  invite_create: {
    route: "POST /invites",
    actions: ["manageInvites"],
    parse: (f, user) => {
      const role = f.role();
      let expiresIn: number | undefined = DEFAULT_INVITE_SECS;
      const e = f.get("expiresIn");
      if (e !== undefined) {
        expiresIn = f.isWhole("expiresIn") && Number(e) >= 1 && Number(e) <= MAX_INVITE_SECS ? Number(e) : undefined;
        if (expiresIn === undefined) f.problem("expiresIn", "must be a whole number of seconds from 1 to 31536000");
      }
      const name = f.name("name");
      if (role === undefined || expiresIn === undefined) return undefined;
      return { kind: "invite_create", role, expiresIn, ...(name !== undefined && { name }), user };
    },
  },
  invite_revoke: {
    route: "DELETE /invites/{id}",
    id: "inviteId",
    actions: ["manageInvites"],
    parse: (f, user) => {
      const inviteId = f.requiredId("inviteId");
      return inviteId === undefined ? undefined : { kind: "invite_revoke", inviteId, user };
    },
  },
  set_role: {
    route: "POST /invites/{id}/role",
    id: "inviteId",
    actions: ["setRole"],
    parse: (f, user) => {
      const inviteId = f.requiredId("inviteId");
      const role = f.role();
      return inviteId === undefined || role === undefined ? undefined : { kind: "set_role", inviteId, role, user };
    },
  },
  set_policy: {
    route: "POST /policy",
    actions: ["setPolicy"],
    parse: (f, user) => {
      let policy: Policy | undefined;
      if (f.get("policy") === undefined) f.problem("policy", "is required");
      else {
        policy = parsePolicy(f.get("policy"));
        if (policy === undefined) f.problem("policy", "must be auto, ask or off");
      }
      const allow = f.allowList();
      if (policy === undefined || allow === null) return undefined;
      return { kind: "set_policy", policy, ...(allow !== undefined && { allow }), user };
    },
  },
  approve: {
    route: "POST /approve",
    actions: ["approve"],
    parse: (f, user) => {
      const approvalId = f.requiredId("approvalId");
      const approved = f.get("approved");
      if (approved === undefined) f.problem("approved", "is required");
      else if (typeof approved !== "boolean") f.problem("approved", "must be true or false");
      if (approvalId === undefined || typeof approved !== "boolean") return undefined;
      return { kind: "approve", approvalId, approved, user };
    },
  },
  ticket: {
    route: "POST /ticket",
    actions: ["watch"],
    parse: (_f, user) => ({ kind: "ticket", user }),
  },
  set_model: {
    route: "POST /model",
    actions: ["setModel"],
    parse: (f, user) => {
      const model = f.requiredText("model");
      return model === undefined ? undefined : { kind: "set_model", model, user };
    },
  },
} as const satisfies Record<string, Operation>;

/** An rpc method: a room operation's name. */
export type Method = keyof typeof OPERATIONS;
/** The rpc methods, in the table's order. */
export const METHODS = Object.keys(OPERATIONS) as Method[];
/** The socket's own operations (no route): agent.ts answers them. */
export type SocketMethod = { [M in Method]: (typeof OPERATIONS)[M]["route"] extends null ? M : never }[Method];

export function isMethod(name: string): name is Method {
  return Object.prototype.hasOwnProperty.call(OPERATIONS, name);
}

/** A read over HTTP only (no rpc, no body): its route, and what it is to the role table (absent: everyone may). */
interface ReadRoute {
  route: Route;
  id?: IdField;
  actions?: readonly Action[];
}

/** The room's reads. */
export const READS = {
  process_list: { route: "GET /processes" },
  process_get: { route: "GET /processes/{id}", id: "processId" },
  process_logs: { route: "GET /processes/{id}/logs", id: "processId" },
  ports: { route: "GET /ports" },
  checkpoint_list: { route: "GET /checkpoints" },
  invite_list: { route: "GET /invites", actions: ["manageInvites"] },
} as const satisfies Record<string, ReadRoute>;
export type Read = keyof typeof READS;

/** A route that a request's path (the segments after `/api/rooms/{room}/`) matched. */
export interface RouteHit {
  verb: string;
  kind: Method | Read;
  /** The `{id}` segment, still percent-encoded, and the field it fills. */
  id?: { raw: string; field: IdField };
}

/** Every route of the two tables, split: verb, path segments, what it is. */
const ROUTES = [...Object.entries(OPERATIONS), ...Object.entries(READS)].flatMap(([kind, entry]) => {
  if (entry.route === null) return [];
  const [verb, path] = entry.route.split(" ");
  const id = "id" in entry ? entry.id : undefined;
  return [{ verb, segments: path.split("/").slice(1), kind: kind as Method | Read, id }];
});

/** The routes whose path is `segments` (none: 404; none of this verb: 405). `{id}` matches one non-empty segment. */
export function routesOf(segments: string[]): RouteHit[] {
  return ROUTES.filter((r) => r.segments.length === segments.length && r.segments.every((s, i) => s === segments[i] || (s === "{id}" && segments[i] !== ""))).map(
    (r) => {
      const at = r.segments.indexOf("{id}");
      return { verb: r.verb, kind: r.kind, ...(at >= 0 && r.id !== undefined && { id: { raw: segments[at], field: r.id } }) };
    },
  );
}

/**
 * The operation a request without a body is (a read, a DELETE): its kind
 * and the route's `{id}`, as it came (no parser: the path was matched).
 */
export function pathOp(kind: Method | Read, id?: { field: IdField; value: string }): Op {
  // Every bodiless route's Op is its kind plus at most the id field.
  return { kind, ...(id !== undefined && { [id.field]: id.value }) } as Op;
}

/**
 * The action an operation is; undefined for what everyone may do (reads,
 * and the room's internal operations). `terminalRuns`: whether a
 * `term_open` only attaches to a running terminal (watching it).
 */
export function opAction(op: Op, terminalRuns: boolean): Action | undefined {
  if (isMethod(op.kind)) {
    const entry: Operation = OPERATIONS[op.kind];
    return entry.actions[entry.which?.(op, terminalRuns) ?? 0];
  }
  const read: ReadRoute | undefined = Object.prototype.hasOwnProperty.call(READS, op.kind) ? READS[op.kind as Read] : undefined;
  return read?.actions?.[0];
}

/** The longest an invite may last, in seconds (a year), and how long one lasts unless asked. */
export const MAX_INVITE_SECS = 365 * 86_400;
export const DEFAULT_INVITE_SECS = 86_400;

/** Problems of a room id, as `details`. */
export function roomDetails(room: string): Details {
  const details: Details = {};
  if (!validRoomId(room)) addDetail(details, "room", ROOM_RULE);
  return details;
}

/**
 * Parses operation `method` from `obj`. `details` holds problems found
 * before (the room id); `defaultUser` is the socket's `user`. Throws the
 * 400 naming every bad field.
 */
export function parseOp(method: Method, obj: JsonObject, details: Details = {}, defaultUser?: string): Op {
  const f = new Fields(obj, details);
  const user = f.name("userId") ?? defaultUser;
  const op = (OPERATIONS[method] as Operation).parse(f, user);
  if (op === undefined || Object.keys(f.details).length > 0) throw ApiError.invalid(f.details);
  return op;
}

function terminalOp(kind: "term_detach" | "term_close", f: Fields, user: string | undefined): Op | undefined {
  const termId = f.get("termId");
  if (typeof termId === "string" && termId !== "") return { kind, termId, user };
  f.problem("termId", "must be a terminal's id");
  return undefined;
}

function processOp(kind: "process_kill" | "process_follow" | "process_unfollow", f: Fields, user: string | undefined): Op | undefined {
  const processId = f.requiredId("processId");
  return processId === undefined ? undefined : { kind, processId, user };
}

function checkpointOp(kind: "checkpoint_restore" | "checkpoint_delete", f: Fields, user: string | undefined): Op | undefined {
  const checkpointId = f.requiredId("checkpointId");
  return checkpointId === undefined ? undefined : { kind, checkpointId, user };
}

function exec(f: Fields, user: string | undefined): Op | undefined {
  const cmd = f.requiredText("cmd");
  if (cmd?.includes("\0")) f.problem("cmd", "must not contain NUL characters");
  let timeoutMs: number | undefined;
  const t = f.get("timeoutMs");
  if (t !== undefined) {
    if (f.isWhole("timeoutMs") && Number(t) > 0 && Number(t) <= 18446744073709551615) timeoutMs = Number(t);
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
  const clientId = f.clientId("clientId");
  return { kind: "exec", cmd, timeoutMs, cwd, env, ...(clientId !== undefined && { clientId }), user };
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
