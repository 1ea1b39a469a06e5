// One room inside its Durable Object: the operations of docs/protocol.md
// on it, its turns and its commands (its state, parts and records:
// roomstate.ts). The Durable Object (agent.ts) owns the sockets and gives
// the room a way to reach them.

import { NOT_APPROVED_IN_TIME, POLICY_OFF, allowedWithoutAsking, deniedBy } from "./approvals";
import { execResult, runOf, type CommandEnd } from "./exec";
import { ApiError, describe, ok, okText, type Reply } from "./http";
import { dropCopy } from "./checkpoints";
import type { Op } from "./ops";
import { MAX_FILE_BODY, WORKSPACE, type Checkpoint, checkpointJson, cleanupFrame, defaultProcessName, execResultJson, messageResponseText, portJson, processJson, statePatchFrame, type Run } from "./protocol";
import { sandboxName } from "./text";
import { allowedModels, notAllowed } from "./usage";
import { roomOp } from "./rooms";
import { BadPath, type WorkspaceCopy } from "./sandbox/types";
import { pathComponents } from "./files";
import { CANCELLED_TEXT } from "./turn";
import { inviteJson } from "./invites";
import { issueTicket } from "./tickets";
import { ANONYMOUS, RoomState, type Who } from "./roomstate";

/** What the room says of a turn a restart cut off (`duet serve`'s words). */
export const CUT_OFF_TEXT =
  "The server restarted before the agent answered; nothing was lost, but that question has no reply: ask again.";

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

export class Room extends RoomState {
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
    const started = Date.now();
    const reply = await this.performNow(op, who);
    const done = Date.now();
    // What it stored is in the room list before anyone hears of it.
    await this.lobby.settled();
    reply.timing?.push(`lobby;dur=${Date.now() - done}`, `room;dur=${Date.now() - started}`);
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
          const { cmd, timeoutMs, cwd, env, clientId, connection: byConnection } = op;
          const by = op.user ?? ANONYMOUS;
          const end = await this.commands.run({ cmd, timeoutMs, cwd, env, by, source: "user", byConnection, clientId });
          // The answer waits for the command's record to be durable anyway (the output gate): timed here.
          const storing = Date.now();
          await this.store.sync();
          const reply = this.execReply(end);
          reply.timing?.push(`store;dur=${Date.now() - storing}`);
          return reply;
        }
        case "interrupt":
          return ok(await this.commands.interruptAsked(op.execId, op.clientId, op.user ?? ANONYMOUS));
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
        case "disk_free":
          return ok({ free: await this.checkpoints.free() });
        case "pushed":
          return await this.pushed(op);
        case "diff_base": {
          const { checkpoint, copy } = this.checkpoints.base(op.from);
          return ok({ checkpointId: checkpoint.id, copy });
        }
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
          // An invite made with an invite ends no later than that one (src/server/ops/invite.rs).
          const { invite, token } = await this.invites.create(op.role, op.expiresIn, op.name, op.user ?? ANONYMOUS, caller.expiresAt);
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
        case "ticket":
          return ok(await issueTicket(this.env, this.id, caller.inviteId));
        case "set_model": {
          const allowed = allowedModels(this.config);
          if (!allowed.includes(op.model)) throw ApiError.field("model", notAllowed(allowed));
          const before = this.agentState().model;
          if (this.chosenModel !== op.model) {
            this.store.setModel(op.model);
            this.lobby.used();
            this.chosenModel = op.model;
          }
          if (before !== op.model) {
            this.stateCache = undefined;
            this.sockets.patch(statePatchFrame({ agent: this.agentState() }));
            this.noteQuietly({ kind: "model", by: op.user ?? ANONYMOUS, model: op.model });
          }
          return ok({ model: op.model });
        }
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
        return okText(messageResponseText(reply, error, this.messages()));
      }
    }
    this.buckets.messages.takeOrThrow();
    const m = this.storeMessage({ role: "user", userId: user, text, clientId, to });
    if (to === "room") {
      const reply = okText(messageResponseText(null, undefined, this.messages()));
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

  /** The sandbox stopped (its container slept): the next command runs in a fresh shell. */
  sandboxStopped(): void {
    this.moveShell(WORKSPACE);
    this.processes.sandboxGone();
    this.ports.clear();
  }

  private execReply(end: CommandEnd): Reply {
    if (end.startingSecs !== undefined) throw ApiError.starting(end.startingSecs);
    if (!end.outcome) throw ApiError.internal(end.failure ?? "the command could not run");
    const reply = ok({ result: execResultJson(execResult(end, end.outcome)), sandboxName: sandboxName(this.id) });
    const spans = end.outcome.spans;
    if (spans) {
      reply.timing = [`sandbox;dur=${spans.command}`, `cwd;dur=${spans.cwd}`];
      if (spans.start !== undefined) reply.timing.push(`sandbox-start;dur=${spans.start}`);
      if (spans.run !== undefined) reply.timing.push(`sandbox-run;dur=${spans.run}`);
    }
    return reply;
  }

  /**
   * Asks the room's policy whether turn `turnId` may do `what` (a command,
   * `write_file PATH`): why not, or undefined once it may.
   */
  protected async agentAsk(what: string, signal: AbortSignal, turnId: string): Promise<string | undefined> {
    if (this.policy === "off") return POLICY_OFF;
    if (this.policy === "ask" && !allowedWithoutAsking(what, this.allow())) {
      const decision = await this.approvals.request(what, turnId, signal);
      if ("withdrawn" in decision) return CANCELLED_TEXT;
      if (!decision.approved) return decision.timedOut ? NOT_APPROVED_IN_TIME : deniedBy(decision.by);
    }
    return undefined;
  }

  /**
   * Waits until turn `turnId` may change the workspace: a restore under
   * way first, then before its first change its automatic checkpoint.
   * False once it was cancelled.
   */
  private async beforeChange(signal: AbortSignal, turnId: string): Promise<boolean> {
    const aborted = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    await Promise.race([this.cleaning, aborted]);
    if (signal.aborted) return false;
    if (this.checkpointedTurn !== turnId) {
      this.checkpointedTurn = turnId;
      const taking = this.checkpoints.beforeTurn(turnId);
      this.quietCheckpoints++;
      void taking.finally(() => this.quietCheckpoints--).catch(() => undefined);
      await Promise.race([taking, aborted]);
    }
    return !signal.aborted;
  }

  /**
   * Runs a command of turn `turnId` (begun by socket `byConnection`), like
   * an exec by "agent"; before the turn's first, its automatic checkpoint.
   * A restore under way is waited for, unless it cancels this turn.
   */
  protected async agentRun(cmd: string, signal: AbortSignal, turnId: string, byConnection?: string): Promise<Run> {
    const notRun = (error: string): Run => ({ cmd, stdout: "", stderr: "", exitCode: null, error });
    const refused = await this.agentAsk(cmd, signal, turnId);
    if (refused !== undefined) return notRun(refused);
    if (!(await this.beforeChange(signal, turnId))) return notRun(CANCELLED_TEXT);
    return runOf(await this.commands.run({ cmd, by: "agent", source: "agent", signal, byConnection }));
  }

  /** Writes a workspace file for turn `turnId` (asked already): why it could not, or undefined. */
  protected async agentWrite(path: string, bytes: Uint8Array, signal: AbortSignal, turnId: string): Promise<string | undefined> {
    const parts = pathComponents(path);
    if (typeof parts === "string") return `${path} ${parts}`;
    if (bytes.length > MAX_FILE_BODY) return `too large: a file may be at most ${MAX_FILE_BODY} bytes`;
    if (!(await this.beforeChange(signal, turnId))) return CANCELLED_TEXT;
    try {
      await this.sandbox().writeFile(parts.join("/"), bytes);
      return undefined;
    } catch (e) {
      if (e instanceof BadPath) return `${path} is not a path inside /workspace (${e.message})`;
      return describe(e);
    }
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
   * A push was unpacked: its `push-N` checkpoint (none when it does not fit
   * the disk: the push stands), then its record, then the push's answer.
   */
  private async pushed(op: Extract<Op, { kind: "pushed" }>): Promise<Reply> {
    const by = op.user ?? ANONYMOUS;
    const { path, files, bytes, deleted } = op;
    let checkpoint: Checkpoint | null = null;
    try {
      checkpoint = await this.checkpoints.create({ by, auto: false, push: true });
    } catch (e) {
      console.error(`room ${this.id}: the checkpoint after a push was skipped: ${e instanceof ApiError ? JSON.stringify(e.bodyJson()) : describe(e)}`);
    }
    this.noteQuietly({ kind: "push", by, path, files, bytes, deleted, checkpointId: checkpoint?.id ?? null });
    return ok({ files, bytes, deleted, checkpoint: checkpoint && checkpointJson(checkpoint) });
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
