// A room's state inside its Durable Object: its recent messages and
// commands and where its shell is (the state clients receive), its parts
// (terminal, processes, ports, checkpoints, invites, approvals, turns)
// wired to its storage and its sockets, and the records it stores. The
// operations on it are room.ts's (Room extends this).

import { OWNER, check, type Caller } from "./access";
import { Approvals, parseAllowList, type Policy } from "./approvals";
import { limits, type Env, type Limits } from "./env";
import { Commands } from "./exec";
import { ApiError, describe, ok, type Reply } from "./http";
import { RoomBuckets, rateLimits, type RateLimits } from "./limits";
import { Checkpoints } from "./checkpoints";
import { opAction, type Op } from "./ops";
import { STATE_EXECS, STATE_MESSAGES, execRecordJson, messageJson, stateFrame, statePatchFrame, type Checkpoint, type DuetMessage, type ExecRecord, type RoomEvent, type Run } from "./protocol";
import { messageId } from "./text";
import { recordText } from "./records";
import { roomSandbox } from "./sandbox/adapter";
import type { RoomSandbox } from "./sandbox/types";
import { Invites } from "./invites";
import { LobbyNotes } from "./lobby";
import { Ports } from "./ports";
import { Processes } from "./processes";
import { Store, fitRuns } from "./store";
import { SharedTerminal } from "./terminal";
import { Turns, agentConfig, type AgentConfig, type NewMessage, type TurnHost } from "./turn";
import { agentState } from "./usage";

/** Who asks when nobody says: `userId` absent and a socket without `user`. */
export const ANONYMOUS = "anonymous";

/** `fields` without its absent ones, so that a stored message has no `undefined` field. */
function withoutUndefined<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as T;
}

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

export abstract class RoomState {
  readonly limits: Limits;
  readonly config: AgentConfig;
  readonly rates: RateLimits;
  protected readonly buckets: RoomBuckets;
  protected messageList: DuetMessage[];
  protected execList: ExecRecord[];
  /** Where the shell is: where the next command runs. */
  protected cwd: string;
  protected stateCache?: string;
  protected gen = 0;
  /**
   * Resolves when a cleanup's destroy or a restore ended: commands,
   * messages and checkpoints after it wait (hold()).
   */
  protected cleaning: Promise<void> = Promise.resolve();
  /** The turn whose automatic checkpoint was taken (before its first command). */
  protected checkpointedTurn?: string;
  /** Automatic checkpoints being taken: their list changes wait for the next message. */
  protected quietCheckpoints = 0;
  protected unsentCheckpoints?: Checkpoint[];
  protected sandboxHandle?: RoomSandbox;
  protected readonly commands: Commands;
  protected readonly turns: Turns;
  /** Answers of the turns still running for messages with a `clientId`. */
  protected readonly asked = new Map<string, Promise<Reply>>();
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
  protected policy: Policy;
  /** The model the room chose (used while the backend allows it). */
  protected chosenModel?: string;
  /** The server's allow list (DUET_APPROVAL_ALLOW) and the room's own. */
  protected readonly serverAllow: string[];
  protected roomAllow: string[];
  /** What the room list (lobby.ts) is told of this room. */
  readonly lobby: LobbyNotes;

  constructor(
    readonly id: string,
    protected readonly env: Env,
    protected readonly store: Store,
    protected readonly sockets: Sockets,
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
      started: (generation, record) => current(generation) && this.quietly(() => this.store.writeExec(record, false)),
      listed: (generation, ts) => current(generation) && this.lobby.stored(ts),
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
    this.chosenModel = store.model();
    this.serverAllow = parseAllowList(env.DUET_APPROVAL_ALLOW);
    const host: TurnHost = {
      emit: (frame) => this.sockets.all(frame),
      run: (cmd, signal, turnId, byConnection) => this.agentRun(cmd, signal, turnId, byConnection),
      screen: () => this.terminal.screen(),
      files: () => this.sandbox(),
      model: () => this.agentState().model ?? undefined,
      ask: (what, signal, turnId) => this.agentAsk(what, signal, turnId),
      writeFile: (path, bytes, signal, turnId) => this.agentWrite(path, bytes, signal, turnId),
      edited: (event) => {
        if (!this.turns.afterReply(event, recordText(event))) this.noteQuietly(event);
      },
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
      agent: this.agentState(),
    }));
  }

  /** The state's `agent`: the room's model and the backend's bounds. */
  protected agentState() {
    return agentState(this.config, this.chosenModel);
  }

  /** The commands that never ask: the server's entries, then the room's. */
  protected allow(): string[] {
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
  protected pruneCheckpoints(): void {
    if (!this.checkpoints.prune()) return;
    this.stateCache = undefined;
    this.sockets.patch(statePatchFrame({ checkpoints: this.checkpoints.list() }));
  }

  /** Runs `fn` once earlier holders are done; commands, messages and checkpoints wait for it. */
  protected async hold<T>(fn: () => Promise<T>): Promise<T> {
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
  protected storeRecord(event: RoomEvent, text = recordText(event), quiet = false): DuetMessage {
    return this.storeMessage({ role: "system", userId: event.by, text, event }, quiet);
  }

  /** A record of what happened anyway (a command's end, a rename): its answer stands even when the record cannot be stored. */
  protected noteQuietly(event: RoomEvent, text = recordText(event)): void {
    try {
      this.storeRecord(event, text);
    } catch (e) {
      console.error(`room ${this.id}: storing a ${event.kind} record failed: ${describe(e)}`);
    }
  }

  /** The shell is now in `cwd`: kept, and the sockets told, when it moved. */
  protected moveShell(cwd: string): void {
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

  /** A write of a running command's row: a failure is logged, the command runs on. */
  protected quietly(write: () => void): void {
    try {
      write();
    } catch (e) {
      console.error(`room ${this.id}: storing a running command failed: ${describe(e)}`);
    }
  }

  protected keepExec(generation: number, record: ExecRecord): void {
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

  /** Asks the room's policy whether the agent's turn `turnId` may do `what` (room.ts); why not, or undefined. */
  protected abstract agentAsk(what: string, signal: AbortSignal, turnId: string): Promise<string | undefined>;

  /** Writes a workspace file for the agent's turn `turnId` (room.ts); why it could not, or undefined. */
  protected abstract agentWrite(path: string, bytes: Uint8Array, signal: AbortSignal, turnId: string): Promise<string | undefined>;

  /** Runs a command of the agent's turn `turnId` (room.ts). */
  protected abstract agentRun(cmd: string, signal: AbortSignal, turnId: string, byConnection?: string): Promise<Run>;
}
