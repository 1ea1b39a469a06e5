// One room inside its Durable Object: its recent messages and commands and
// where its shell is (the state clients receive), the operations of
// docs/protocol.md on it, its turns, its commands and its records. The
// Durable Object (agent.ts) owns the sockets and gives the room a way to
// reach them.

import { OWNER, check, type Caller } from "./access";
import { Approvals, NOT_APPROVED_IN_TIME, POLICY_OFF, allowedWithoutAsking, deniedBy, parseAllowList, type Policy } from "./approvals";
import { limits, type Env, type Limits } from "./env";
import { Commands, execResult, runOf, type CommandEnd } from "./exec";
import { ApiError, describe, ok, type Reply } from "./http";
import { RoomBuckets, rateLimits, type RateLimits } from "./limits";
import { AUTO_BY, Checkpoints, dropCopy } from "./checkpoints";
import { opAction, type Op } from "./ops";
import {
  STATE_EXECS,
  STATE_MESSAGES,
  WORKSPACE,
  checkpointJson,
  cleanupFrame,
  defaultProcessName,
  execRecordJson,
  execResultJson,
  messageId,
  messageJson,
  messageResponseJson,
  portJson,
  processJson,
  sandboxName,
  stateFrame,
  statePatchFrame,
  type Checkpoint,
  type DuetMessage,
  type ExecRecord,
  type RoomEvent,
  type Run,
} from "./protocol";
import { recordText } from "./records";
import { roomSandbox } from "./sandbox/adapter";
import { roomOp } from "./rooms";
import type { RoomSandbox, WorkspaceCopy } from "./sandbox/types";
import { Invites, inviteJson } from "./invites";
import { LobbyNotes } from "./lobby";
import { Ports } from "./ports";
import { Processes } from "./processes";
import { Store, fitRuns } from "./store";
import { SharedTerminal } from "./terminal";
import { Turns, agentConfig, type AgentConfig, type NewMessage, type TurnHost } from "./turn";

/** Who asks when nobody says: `userId` absent and a socket without `user`. */
const ANONYMOUS = "anonymous";

/** `fields` without its absent ones, so that a stored message has no `undefined` field. */
function withoutUndefined<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as T;
}

/** What the room says of a turn a restart cut off (`duet serve`'s words). */
export const CUT_OFF_TEXT =
  "The server restarted before the agent answered; nothing was lost, but that question has no reply: ask again.";

/** How the room reaches its sockets. */
export interface Sockets {
  /** A frame to every connection. */
  all(text: string): void;
  /** A message was stored or changed: the state, or `duet_message` to sockets that asked for deltas. */
  message(m: DuetMessage, patch?: string): void;
  /** The whole state to every connection (cleanup). */
  state(): void;
  /** Another field of the state changed: `patch` (duet_state) to sockets that asked for deltas, the state to the others. */
  patch(patch: string): void;
  /** A frame to one socket, by connection id. */
  send(connection: string, text: string): void;
  /** How many sockets are connected. */
  count(): number;
  /** Invite `inviteId`'s role changed: its sockets get `duet_you`, everyone `duet_presence`. */
  roleChanged(inviteId: string): void;
  /** Invite `inviteId` was revoked or expired: its sockets close with 4401 and `reason`. */
  closeInvite(inviteId: string, reason: string): void;
  /** An invite expires at `at` (ms): its sockets must close then, even if the object hibernated meanwhile. */
  expiresAt(at: number): void;
}

/** What a request tells the room of who asks: the invite it came with (none: the server's token). */
export interface Who {
  inviteId?: string;
}

/** 401, as for a wrong token: the invite was revoked or expired since the Worker looked. */
function gone(): ApiError {
  return ApiError.unauthorized();
}

/** 409 of a backend without a token: nobody needs an invite there. */
function invitesNeedToken(): ApiError {
  return new ApiError(409, "invites need a token", {
    token: [
      "this server has no token, so everyone in it is an owner: start it with --token (or DUET_TOKEN) to invite people with roles",
    ],
  });
}

/** How long a fork's copy of the workspace as it is now is kept (it is deleted once the new room has it). */
const FORK_COPY_TTL_SECS = 3600;
/** How long a fork holds the new room's name while the copy is made. */
const FORK_RESERVE_MS = 600_000;

/** 409: a fork's `to` exists. */
function roomExists(to: string): ApiError {
  return new ApiError(409, "the room exists", { to: [`room ${JSON.stringify(to)} exists already`] });
}

/** Another room's error answer, as this room's. */
async function passOn(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: string; details?: Record<string, string[]> };
    return new ApiError(res.status, String(body.error ?? text), body.details);
  } catch {
    return new ApiError(res.status, text);
  }
}

export class Room {
  readonly limits: Limits;
  readonly config: AgentConfig;
  readonly rates: RateLimits;
  private readonly buckets: RoomBuckets;
  private messageList: DuetMessage[];
  private execList: ExecRecord[];
  /** Where the shell is: where the next command runs. */
  private cwd: string;
  private stateCache?: string;
  private gen = 0;
  /**
   * Resolves when a cleanup's destroy or a restore ended: commands,
   * messages and checkpoints after it wait (hold()).
   */
  private cleaning: Promise<void> = Promise.resolve();
  /** The turn whose automatic checkpoint was taken (before its first command). */
  private checkpointedTurn?: string;
  /** Automatic checkpoints being taken: their list changes wait for the next message. */
  private quietCheckpoints = 0;
  private unsentCheckpoints?: Checkpoint[];
  private sandboxHandle?: RoomSandbox;
  private readonly commands: Commands;
  private readonly turns: Turns;
  /** Answers of the turns still running for messages with a `clientId`. */
  private readonly asked = new Map<string, Promise<Reply>>();
  /** The room's shared terminal. */
  readonly terminal: SharedTerminal;
  /** Its background processes, and the ports something listens on. */
  readonly processes: Processes;
  readonly ports: Ports;
  /** Its checkpoints (copies of /workspace). */
  readonly checkpoints: Checkpoints;
  /** Its invites, and the agent's commands waiting for a person. */
  readonly invites: Invites;
  readonly approvals: Approvals;
  private policy: Policy;
  /** The server's allow list (DUET_APPROVAL_ALLOW) and the room's own. */
  private readonly serverAllow: string[];
  private roomAllow: string[];
  /** What the room list (lobby.ts) is told of this room. */
  readonly lobby: LobbyNotes;

  constructor(
    readonly id: string,
    private readonly env: Env,
    private readonly store: Store,
    private readonly sockets: Sockets,
  ) {
    this.limits = limits(env);
    this.lobby = new LobbyNotes(env, id);
    this.config = agentConfig(env);
    this.rates = rateLimits(env);
    this.buckets = new RoomBuckets(this.rates);
    this.messageList = store.recentMessages();
    this.execList = store.recentExecs();
    this.cwd = store.shellCwd();
    const current = (generation: number) => generation === this.gen;
    this.commands = new Commands({
      limits: this.limits,
      sandbox: () => this.sandbox(),
      generation: () => this.gen,
      takeExecNumber: () => this.store.takeExecNumber(),
      broadcast: (text) => this.sockets.all(text),
      record: (generation, record) => this.keepExec(generation, record),
      started: (generation, record) => {
        if (!current(generation)) return;
        this.quietly(() => this.store.writeExec(record, false));
        this.lobby.stored(record.ts);
      },
      printed: (execId, p, duration) =>
        this.quietly(() => this.store.execOutput(execId, p.stdout, p.stderr, p.truncated, duration)),
      unstarted: (execId) => this.quietly(() => this.store.dropExec(execId)),
      shellCwd: () => this.cwd,
      shellMoved: (generation, cwd) => current(generation) && this.moveShell(cwd),
      note: (generation, event, text) => current(generation) && this.noteQuietly(event, text),
      noteAfterReply: (generation, event, text) => {
        if (current(generation) && !this.turns.afterReply(event, text)) this.noteQuietly(event, text);
      },
    });
    this.terminal = new SharedTerminal(
      {
        sandbox: () => this.sandbox(),
        all: (text) => this.sockets.all(text),
        send: (connection, text) => this.sockets.send(connection, text),
        changed: (terminal) => {
          this.stateCache = undefined;
          this.sockets.patch(statePatchFrame({ terminal }));
        },
      },
      env.DUET_TERMINAL_IDLE_SECS,
    );
    this.ports = new Ports(id, {
      sandbox: () => this.sandbox(),
      changed: (ports) => {
        this.stateCache = undefined;
        this.sockets.patch(statePatchFrame({ ports }));
      },
    });
    this.processes = new Processes(
      {
        sandbox: () => this.sandbox(),
        all: (text) => this.sockets.all(text),
        send: (connection, text) => this.sockets.send(connection, text),
        changed: (processes) => {
          this.stateCache = undefined;
          this.sockets.patch(statePatchFrame({ processes }));
        },
        runningChanged: (running) => this.ports.watch(running > 0),
        takeNumber: () => this.store.takeProcessNumber(),
        save: (p) => this.store.saveProcess(p),
        forget: (processId) => this.store.forgetProcess(processId),
      },
      this.limits.maxProcesses,
      store.processes(),
    );
    this.checkpoints = new Checkpoints(
      {
        sandbox: () => this.sandbox(),
        bucket: env.BACKUP_BUCKET,
        takeNumber: () => this.store.takeCheckpointNumber(),
        save: (c) => this.store.saveCheckpoint(c),
        forget: (id) => this.store.forgetCheckpoint(id),
        changed: (checkpoints) => {
          this.stateCache = undefined;
          // A turn's automatic checkpoint goes out with its next message:
          // the turn's frames stay as they always were.
          if (this.quietCheckpoints > 0) this.unsentCheckpoints = checkpoints;
          else this.sockets.patch(statePatchFrame({ checkpoints }));
        },
      },
      { autoKeep: this.limits.autoCheckpoints, ttlSecs: this.limits.checkpointTtlSecs, diskBytes: this.limits.diskBytes },
      store.checkpoints(),
    );
    this.invites = new Invites(store);
    this.approvals = new Approvals(
      {
        all: (text) => this.sockets.all(text),
        changed: (approvals) => {
          this.stateCache = undefined;
          this.sockets.patch(statePatchFrame({ approvals }));
        },
      },
      this.limits.approvalTimeoutMs,
    );
    ({ policy: this.policy, allow: this.roomAllow } = store.policy());
    this.serverAllow = parseAllowList(env.DUET_APPROVAL_ALLOW);
    const host: TurnHost = {
      emit: (frame) => this.sockets.all(frame),
      run: (cmd, signal, turnId, byConnection) => this.agentRun(cmd, signal, turnId, byConnection),
      screen: () => this.terminal.screen(),
      files: () => this.sandbox(),
    };
    this.turns = new Turns({
      config: this.config,
      messages: () => this.messages(),
      storeMessage: (m) => this.storeMessage(m),
      host,
    });
  }

  sandbox(): RoomSandbox {
    return (this.sandboxHandle ??= roomSandbox(this.env, this.id));
  }

  messages(): DuetMessage[] {
    return [...this.messageList];
  }

  /** The current `cf_agent_state`, serialized once per change (expired checkpoints left out). */
  stateText(): string {
    if (this.checkpoints.prune()) this.stateCache = undefined;
    return (this.stateCache ??= stateFrame(this.messageList, this.execList, {
      shell: { cwd: this.cwd },
      terminal: this.terminal.state(),
      processes: this.processes.list(),
      ports: this.ports.state(),
      checkpoints: this.checkpoints.list(),
      policy: this.policy,
      approvals: this.approvals.list(),
      allow: this.allow(),
    }));
  }

  /** The commands that never ask: the server's entries, then the room's. */
  private allow(): string[] {
    return [...this.serverAllow, ...this.roomAllow];
  }

  /** Who asks with `who`, as of now; undefined once its invite was revoked or expired. */
  callerOf(who: Who | undefined): Caller | undefined {
    return who?.inviteId === undefined ? OWNER : this.invites.caller(who.inviteId);
  }

  /** Throws the 403 unless `caller` may perform `op` (the table of src/access.ts). */
  authorize(op: Op, caller: Caller): void {
    const action = opAction(op, this.terminal.state() !== null);
    if (action) check(caller.role, action);
  }

  /** Expired checkpoints leave the list; the sockets are told. */
  private pruneCheckpoints(): void {
    if (!this.checkpoints.prune()) return;
    this.stateCache = undefined;
    this.sockets.patch(statePatchFrame({ checkpoints: this.checkpoints.list() }));
  }

  /** Runs `fn` once earlier holders are done; commands, messages and checkpoints wait for it. */
  private async hold<T>(fn: () => Promise<T>): Promise<T> {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.cleaning;
    this.cleaning = before.then(() => held);
    try {
      await before;
      return await fn();
    } finally {
      release();
    }
  }

  /** Whether the room exists, as a fork's `to` must not: anything stored, anyone joined, or a fork under way into it. */
  private exists(): boolean {
    return this.store.everUsed() || this.sockets.count() > 0 || this.store.forkReservedUntil() > Date.now();
  }

  /** Whether anything was ever stored in the room, or anyone joined it. */
  everUsed(): boolean {
    return this.store.everUsed();
  }

  /** Someone joined: the room exists from now on. */
  joined(): void {
    this.lobby.used();
    try {
      this.store.markJoined();
    } catch (e) {
      console.error(`room ${this.id}: noting a join failed: ${describe(e)}`);
    }
  }

  /**
   * Performs an operation for `who` (absent: the room itself, or the
   * server's token) once its role allows it; errors come back as their
   * answers. An invite that fixes a name makes it the operation's `user`.
   */
  async perform(op: Op, who?: Who): Promise<Reply> {
    const reply = await this.performNow(op, who);
    // What it stored is in the room list before anyone hears of it.
    await this.lobby.settled();
    return reply;
  }

  private async performNow(op: Op, who?: Who): Promise<Reply> {
    try {
      const caller = this.callerOf(who);
      if (!caller) throw gone();
      this.authorize(op, caller);
      if (caller.name !== undefined) op.user = caller.name;
      this.pruneCheckpoints();
      switch (op.kind) {
        case "message":
          await this.cleaning;
          return await this.message(op);
        case "exec": {
          await this.cleaning;
          this.buckets.commands.takeOrThrow();
          const { cmd, timeoutMs, cwd, env, connection: byConnection } = op;
          const by = op.user ?? ANONYMOUS;
          const end = await this.commands.run({ cmd, timeoutMs, cwd, env, by, source: "user", byConnection });
          return this.execReply(end);
        }
        case "interrupt":
          return ok({ interrupted: await this.commands.interrupt(op.execId, op.user ?? ANONYMOUS) });
        case "cancel":
          return ok({ cancelled: this.turns.cancel(op.turnId, op.user ?? ANONYMOUS) });
        case "cleanup":
          return await this.cleanup(op.user ?? ANONYMOUS);
        case "rename":
          // The socket's own name: agent.ts asks rename() with it.
          throw ApiError.field("name", "only a socket of the room can change its name");
        case "term_open":
        case "term_detach":
        case "term_close":
          // The socket's own attachment: agent.ts asks this.terminal with it.
          throw ApiError.field("termId", "only a socket of the room can use the terminal");
        case "process_start": {
          await this.cleaning;
          const by = op.user ?? ANONYMOUS;
          const reply = await this.processes.start(op.cmd, op.name ?? defaultProcessName(op.cmd), by);
          if (reply.status === 200) {
            const { process } = JSON.parse(reply.body) as { process: { id: string; name: string; cmd: string } };
            this.noteQuietly({ kind: "process", by, processId: process.id, name: process.name, cmd: process.cmd });
          }
          return reply;
        }
        case "process_kill":
          return await this.processes.kill(op.processId);
        case "process_follow":
        case "process_unfollow":
          // The socket's own follow: agent.ts asks this.processes with it.
          throw ApiError.field("processId", "only a socket of the room can follow a process");
        case "process_list":
          return ok({ processes: this.processes.list().map(processJson) });
        case "process_get":
          return this.processes.get(op.processId);
        case "process_logs":
          return this.processes.logs(op.processId);
        case "ports":
          // Asked for: looked at now (where the sandbox runs; never starting it).
          return ok({ ports: (await this.ports.look()).map(portJson) });
        case "upload": {
          const { path, size } = op;
          this.storeRecord({ kind: "upload", by: op.user ?? ANONYMOUS, path, size });
          return ok({ path, size });
        }
        case "deleted":
          this.storeRecord({ kind: "delete", by: op.user ?? ANONYMOUS, path: op.path });
          return ok({ deleted: true });
        case "checkpoint_create": {
          await this.cleaning;
          const by = op.user ?? ANONYMOUS;
          const c = await this.checkpoints.create({ by, name: op.name, auto: false });
          // The checkpoint is taken either way: a record that cannot be stored is only logged.
          this.noteQuietly({ kind: "checkpoint", by, checkpointId: c.id, name: c.name });
          return ok({ checkpoint: checkpointJson(c) });
        }
        case "checkpoint_list":
          return ok({ checkpoints: this.checkpoints.list().map(checkpointJson) });
        case "checkpoint_delete":
          this.checkpoints.delete(op.checkpointId);
          return ok({ deleted: true });
        case "checkpoint_restore":
          return await this.restore(op.checkpointId, op.user ?? ANONYMOUS);
        case "fork":
          return await this.fork(op.to, op.checkpointId, op.user ?? ANONYMOUS);
        case "fork_into":
          return await this.forkInto(op);
        case "invite_create": {
          if ((this.env.DUET_TOKEN ?? "") === "") throw invitesNeedToken();
          const { invite, token } = await this.invites.create(op.role, op.expiresIn, op.name, op.user ?? ANONYMOUS);
          this.lobby.used();
          this.sockets.expiresAt(invite.expiresAt);
          const link = op.link ?? "http://localhost";
          const url = `${link.replace("://", `://${token}@`)}/${this.id}`;
          return ok({ invite: inviteJson(invite), token, url });
        }
        case "invite_list":
          return ok({ invites: this.invites.list().map(inviteJson) });
        case "invite_revoke":
          this.invites.revoke(op.inviteId);
          this.sockets.closeInvite(op.inviteId, "the invite was revoked");
          return ok({ revoked: true });
        case "set_role": {
          const invite = this.invites.setRole(op.inviteId, op.role);
          this.sockets.roleChanged(op.inviteId);
          return ok({ invite: inviteJson(invite) });
        }
        case "set_policy": {
          const allow = op.allow ?? this.roomAllow;
          const changed = op.policy !== this.policy;
          this.store.setPolicy(op.policy, allow);
          this.lobby.used();
          this.policy = op.policy;
          this.roomAllow = allow;
          this.stateCache = undefined;
          this.sockets.patch(statePatchFrame({ policy: this.policy, allow: this.allow() }));
          if (changed) this.noteQuietly({ kind: "policy", by: op.user ?? ANONYMOUS, policy: op.policy });
          return ok({ policy: this.policy });
        }
        case "approve":
          return this.approvals.answer(op.approvalId, op.approved, op.user ?? ANONYMOUS);
      }
    } catch (e) {
      return (e instanceof ApiError ? e : ApiError.internal(describe(e))).reply();
    }
  }

  /**
   * Stores a user message; one for the agent is answered when its turn
   * ended, one for the room at once. A `clientId` already used in the room
   * stores nothing: it answers as the first request did (waiting for its
   * turn if it still runs; a turn a restart cut off answers that it was).
   */
  private async message(op: Extract<Op, { kind: "message" }>): Promise<Reply> {
    const { text, user, clientId, to, connection } = op;
    if (clientId !== undefined) {
      const running = this.asked.get(clientId);
      if (running) return running;
      const seen = this.store.clientAnswer(clientId);
      if (seen) {
        const { reply, error } = seen.answer ?? { reply: null, error: CUT_OFF_TEXT };
        return ok(messageResponseJson(reply, error, this.messages()));
      }
    }
    this.buckets.messages.takeOrThrow();
    const m = this.storeMessage({ role: "user", userId: user, text, clientId, to });
    if (to === "room") {
      const reply = ok(messageResponseJson(null, undefined, this.messages()));
      if (clientId !== undefined) this.keepAnswer(m.id, reply);
      return reply;
    }
    const answer = this.turns.ask(user, m.id, connection);
    if (clientId === undefined) return answer;
    const kept = answer.then((reply) => {
      this.keepAnswer(m.id, reply);
      return reply;
    });
    this.asked.set(clientId, kept);
    try {
      return await kept;
    } finally {
      this.asked.delete(clientId);
    }
  }

  /** Whether a message with this `clientId` was already stored (a repeat stores nothing and is not counted). */
  knowsClient(clientId: string): boolean {
    return this.asked.has(clientId) || this.store.clientAnswer(clientId) !== undefined;
  }

  /** Keeps a turn's answer beside its question, for a repeated `clientId`. */
  private keepAnswer(id: string, reply: Reply): void {
    try {
      const body = JSON.parse(reply.body) as { reply?: string | null; error?: string };
      if (reply.status === 200) this.store.setAnswer(id, body.reply ?? null, body.error);
      else this.store.setAnswer(id, null, body.error ?? "the agent's answer could not be stored");
    } catch (e) {
      // A cleanup removed the question, or storage failed: a repeat then stores it again.
      console.error(`room ${this.id}: keeping an answer failed: ${describe(e)}`);
    }
  }

  /**
   * A turn that a restart cut off: the room's last message is a question
   * nobody answered. Says so once, in a `system` message (src/server/room/mod.rs).
   */
  noteUnfinishedTurn(): void {
    // Room messages and records may follow the question; a reply (or a note why none) ends its turn.
    const last = [...this.messageList].reverse().find((m) => !(m.role === "user" && m.to === "room") && m.event === undefined);
    if (last?.role !== "user") return;
    try {
      this.storeMessage({ role: "system", userId: last.userId, text: CUT_OFF_TEXT });
    } catch (e) {
      console.error(`room ${this.id}: noting an unfinished turn failed: ${describe(e)}`);
    }
  }

  /**
   * A socket goes by `to` instead of `from`: counted as a message (it
   * stores one), then `renamed()` (the socket's name and presence), then the
   * `rename` record when the name changed; answers `{name}`.
   */
  rename(from: string, to: string, renamed: () => void): Reply {
    try {
      this.buckets.messages.takeOrThrow();
    } catch (e) {
      return (e instanceof ApiError ? e : ApiError.internal(describe(e))).reply();
    }
    renamed();
    // The rename happened either way: a record that cannot be stored is only logged.
    if (from !== to) this.noteQuietly({ kind: "rename", by: from, from, to });
    return ok({ name: to });
  }

  /** A page of stored messages (`GET /messages`). */
  page(before: string | undefined, limit: number): Reply {
    try {
      const [messages, hasMore] = this.store.page(before, limit);
      return ok({ messages: messages.map(messageJson), hasMore });
    } catch (e) {
      return ApiError.internal(`the messages could not be read: ${describe(e)}`).reply();
    }
  }

  /** A page of the room's commands (`GET /execs`). */
  execPage(before: string | undefined, limit: number): Reply {
    try {
      const [execs, hasMore] = this.store.execPage(before, limit);
      return ok({ execs: execs.map(execRecordJson), hasMore });
    } catch (e) {
      return ApiError.internal(`the commands could not be read: ${describe(e)}`).reply();
    }
  }

  /** Stores a message, keeps it in the state and tells the sockets (unless `quiet`: a cleanup sends the whole state). */
  storeMessage(fields: NewMessage, quiet = false): DuetMessage {
    const n = this.store.nextMessage();
    const m: DuetMessage = { id: messageId(n), ts: Date.now(), ...withoutUndefined(fields) };
    if (m.runs !== undefined) m.runs = fitRuns(m.text, m.runs);
    try {
      this.store.insertMessage(m, n + 1);
    } catch (e) {
      throw ApiError.internal(`the message could not be stored: ${describe(e)}`);
    }
    this.lobby.stored(m.ts);
    this.messageList.push(m);
    if (this.messageList.length > STATE_MESSAGES) this.messageList.splice(0, this.messageList.length - STATE_MESSAGES);
    this.stateCache = undefined;
    if (!quiet) {
      const unsent = this.unsentCheckpoints;
      this.unsentCheckpoints = undefined;
      this.sockets.message(m, unsent ? statePatchFrame({ checkpoints: unsent }) : undefined);
    }
    return m;
  }

  /** Stores a record of what someone did to the room (`text`: its readable text). */
  private storeRecord(event: RoomEvent, text = recordText(event), quiet = false): DuetMessage {
    return this.storeMessage({ role: "system", userId: event.by, text, event }, quiet);
  }

  /** A record of what happened anyway (a command's end, a rename): its answer stands even when the record cannot be stored. */
  private noteQuietly(event: RoomEvent, text = recordText(event)): void {
    try {
      this.storeRecord(event, text);
    } catch (e) {
      console.error(`room ${this.id}: storing a ${event.kind} record failed: ${describe(e)}`);
    }
  }

  /** The shell is now in `cwd`: kept, and the sockets told, when it moved. */
  private moveShell(cwd: string): void {
    if (cwd === this.cwd) return;
    this.cwd = cwd;
    this.stateCache = undefined;
    try {
      this.store.setShellCwd(cwd);
    } catch (e) {
      console.error(`room ${this.id}: storing the shell's directory failed: ${describe(e)}`);
    }
    this.sockets.patch(statePatchFrame({ shell: { cwd } }));
  }

  /** The sandbox stopped (its container slept): the next command runs in a fresh shell. */
  sandboxStopped(): void {
    this.moveShell(WORKSPACE);
    this.processes.sandboxGone();
    this.ports.clear();
  }

  /** A write of a running command's row: a failure is logged, the command runs on. */
  private quietly(write: () => void): void {
    try {
      write();
    } catch (e) {
      console.error(`room ${this.id}: storing a running command failed: ${describe(e)}`);
    }
  }

  private keepExec(generation: number, record: ExecRecord): void {
    if (generation !== this.gen) return;
    // A command may have started (or stopped) a server.
    this.ports.afterCommand();
    try {
      this.store.insertExec(record);
      this.lobby.stored(record.ts);
    } catch (e) {
      console.error(`room ${this.id}: storing a command failed: ${describe(e)}`);
    }
    this.execList.push(record);
    if (this.execList.length > STATE_EXECS) this.execList.splice(0, this.execList.length - STATE_EXECS);
    this.stateCache = undefined;
  }

  private execReply(end: CommandEnd): Reply {
    if (end.startingSecs !== undefined) throw ApiError.starting(end.startingSecs);
    if (!end.outcome) throw ApiError.internal(end.failure ?? "the command could not run");
    return ok({ result: execResultJson(execResult(end, end.outcome)), sandboxName: sandboxName(this.id) });
  }

  /**
   * Runs a command of turn `turnId` (begun by socket `byConnection`), like
   * an exec by "agent"; before the turn's first, its automatic checkpoint.
   * A restore under way is waited for, unless it cancels this turn.
   */
  private async agentRun(cmd: string, signal: AbortSignal, turnId: string, byConnection?: string): Promise<Run> {
    const cancelled: Run = { cmd, stdout: "", stderr: "", exitCode: null, error: "the agent's turn was cancelled" };
    const notRun = (error: string): Run => ({ cmd, stdout: "", stderr: "", exitCode: null, error });
    if (this.policy === "off") return notRun(POLICY_OFF);
    if (this.policy === "ask" && !allowedWithoutAsking(cmd, this.allow())) {
      const decision = await this.approvals.request(cmd, turnId, signal);
      if ("withdrawn" in decision) return cancelled;
      if (!decision.approved) return notRun(decision.timedOut ? NOT_APPROVED_IN_TIME : deniedBy(decision.by));
    }
    const aborted = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    await Promise.race([this.cleaning, aborted]);
    if (signal.aborted) return cancelled;
    // Before the turn's first command that actually runs.
    if (this.checkpointedTurn !== turnId) {
      this.checkpointedTurn = turnId;
      const taking = this.checkpoints.beforeTurn(turnId);
      this.quietCheckpoints++;
      void taking.finally(() => this.quietCheckpoints--).catch(() => undefined);
      await Promise.race([taking, aborted]);
      if (signal.aborted) return cancelled;
    }
    return runOf(await this.commands.run({ cmd, by: "agent", source: "agent", signal, byConnection }));
  }

  /**
   * Restores checkpoint `checkpointId` in docs/protocol.md's order: the turn
   * cancelled (its `cancel` record), the running command interrupted, the
   * processes and the terminal ended, /workspace replaced and a fresh
   * shell, the `restore` record, the answer. Commands asked for meanwhile
   * run after it.
   */
  private async restore(checkpointId: string, by: string): Promise<Reply> {
    const { checkpoint, copy } = this.checkpoints.find(checkpointId);
    return this.hold(async () => {
      await this.turns.stop(by);
      await this.commands.stopAll();
      const terminalEnded = this.terminal.end();
      await this.processes.stopAll();
      await terminalEnded;
      this.ports.clear();
      await this.sandbox().restoreWorkspace(copy);
      this.storeRecord({ kind: "restore", by, checkpointId: checkpoint.id, name: checkpoint.name });
      this.moveShell(WORKSPACE);
      return ok({ restored: true });
    });
  }

  /**
   * Forks this room into room `to` (reserved there first: 409 when it
   * exists), from a copy of /workspace now or of a checkpoint; both rooms
   * store the `fork` record, the new one as its only message.
   */
  private async fork(to: string, checkpointId: string | undefined, by: string): Promise<Reply> {
    if (to === this.id) throw roomExists(to);
    const from = checkpointId === undefined ? undefined : this.checkpoints.find(checkpointId);
    const into = async (op: Extract<Op, { kind: "fork_into" }>) => {
      const res = await roomOp(this.env, to, op);
      if (!res.ok) throw await passOn(res);
      await res.body?.cancel();
    };
    const step = { kind: "fork_into", from: this.id, by } as const;
    await into({ ...step, phase: "reserve" });
    let copy: WorkspaceCopy | undefined = from?.copy;
    try {
      copy ??= await this.sandbox().copyWorkspace(`fork-${to}`, FORK_COPY_TTL_SECS);
      await into({ ...step, phase: "fill", copy, ...(checkpointId !== undefined && { checkpointId }) });
    } catch (e) {
      await into({ ...step, phase: "release" }).catch((err) => console.error(`room ${this.id}: releasing room ${to} failed: ${describe(err)}`));
      throw e;
    } finally {
      if (!from && copy) await dropCopy(this.env.BACKUP_BUCKET, copy);
    }
    this.noteQuietly({ kind: "fork", by, from: this.id, to, ...(checkpointId !== undefined && { checkpointId }) });
    return ok({ roomId: to });
  }

  /** The new room's side of a fork (fork()). */
  private async forkInto(op: Extract<Op, { kind: "fork_into" }>): Promise<Reply> {
    switch (op.phase) {
      case "reserve":
        if (this.exists()) throw roomExists(this.id);
        this.store.setForkReservedUntil(Date.now() + FORK_RESERVE_MS);
        return ok({ reserved: true });
      case "release":
        this.store.setForkReservedUntil(0);
        return ok({ released: true });
      case "fill": {
        if (!op.copy) throw ApiError.field("copy", "is required");
        const copy = op.copy;
        await this.hold(() => this.sandbox().restoreWorkspace(copy));
        this.store.setForkReservedUntil(0);
        const { from, by, checkpointId } = op;
        this.storeRecord({ kind: "fork", by, from, to: this.id, ...(checkpointId !== undefined && { checkpointId }) });
        return ok({ roomId: this.id });
      }
    }
  }

  /**
   * Cancels the turns, clears history and commands, destroys the sandbox;
   * the emptied room holds the one record of who cleaned it up.
   */
  private async cleanup(by: string): Promise<Reply> {
    this.turns.cleanup();
    // Their `exit` frames go out before `duet_cleanup`.
    const terminalEnded = this.terminal.end();
    await this.processes.endAll();
    this.ports.clear(true);
    const checkpointsGone = this.checkpoints.clear();
    this.sockets.all(cleanupFrame(by));
    this.messageList = [];
    this.execList = [];
    this.gen++;
    this.cwd = WORKSPACE;
    this.stateCache = undefined;
    const errors: string[] = [];
    try {
      this.store.clear();
      this.store.setShellCwd(WORKSPACE);
    } catch (e) {
      errors.push(`history: ${describe(e)}`);
    }
    try {
      this.storeRecord({ kind: "cleanup", by }, undefined, true);
    } catch (e) {
      errors.push(`record: ${describe(e)}`);
    }
    let release = () => {};
    const cleaning = new Promise<void>((resolve) => (release = resolve));
    const before = this.cleaning;
    this.cleaning = cleaning;
    try {
      await checkpointsGone;
    } catch (e) {
      errors.push(`checkpoints: ${describe(e)}`);
    }
    try {
      await before;
      await terminalEnded;
      await this.sandbox().destroy();
    } catch (e) {
      errors.push(`sandbox: ${describe(e)}`);
    } finally {
      release();
    }
    this.sockets.state();
    const body = { cleaned: true, roomId: this.id, ...(errors.length > 0 && { errors }) };
    return { status: errors.length > 0 ? 207 : 200, body: JSON.stringify(body) };
  }
}
