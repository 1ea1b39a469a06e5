// One room inside its Durable Object: its recent messages and commands (the
// state clients receive), the operations of docs/protocol.md on it, its
// turns and its commands. The Durable Object (agent.ts) owns the sockets
// and gives the room a way to reach them.

import { limits, type Env, type Limits } from "./env";
import { Commands, execResult, runOf, type CommandEnd } from "./exec";
import { ApiError, describe, ok, type Reply } from "./http";
import type { Op } from "./ops";
import {
  STATE_EXECS,
  STATE_MESSAGES,
  cleanupFrame,
  execResultJson,
  messageId,
  messageJson,
  sandboxName,
  stateFrame,
  type DuetMessage,
  type ExecRecord,
  type Role,
  type Run,
} from "./protocol";
import { roomSandbox } from "./sandbox/adapter";
import type { RoomSandbox } from "./sandbox/types";
import { Store, fitRuns } from "./store";
import { Turns, agentConfig, type AgentConfig, type TurnHost } from "./turn";

/** How the room reaches its sockets. */
export interface Sockets {
  /** A frame to every connection. */
  all(text: string): void;
  /** A message was stored or changed: the state, or `duet_message` to sockets that asked for deltas. */
  message(m: DuetMessage): void;
  /** The whole state to every connection (cleanup). */
  state(): void;
}

export class Room {
  readonly limits: Limits;
  readonly config: AgentConfig;
  private messageList: DuetMessage[];
  private execList: ExecRecord[];
  private stateCache?: string;
  private gen = 0;
  /** Resolves when a cleanup's destroy ended: commands and messages after it wait. */
  private cleaning: Promise<void> = Promise.resolve();
  private sandboxHandle?: RoomSandbox;
  private readonly commands: Commands;
  private readonly turns: Turns;

  constructor(
    readonly id: string,
    private readonly env: Env,
    private readonly store: Store,
    private readonly sockets: Sockets,
  ) {
    this.limits = limits(env);
    this.config = agentConfig(env);
    this.messageList = store.recentMessages();
    this.execList = store.recentExecs();
    this.commands = new Commands({
      limits: this.limits,
      sandbox: () => this.sandbox(),
      generation: () => this.gen,
      takeExecNumber: () => this.store.takeExecNumber(),
      broadcast: (text) => this.sockets.all(text),
      record: (generation, record) => this.record(generation, record),
    });
    const host: TurnHost = {
      emit: (frame) => this.sockets.all(frame),
      run: (cmd, signal) => this.agentRun(cmd, signal),
    };
    this.turns = new Turns({
      config: this.config,
      messages: () => this.messages(),
      storeMessage: (role, userId, text, runs) => this.storeMessage(role, userId, text, runs),
      host,
    });
  }

  sandbox(): RoomSandbox {
    return (this.sandboxHandle ??= roomSandbox(this.env, this.id));
  }

  messages(): DuetMessage[] {
    return [...this.messageList];
  }

  /** The current `cf_agent_state`, serialized once per change. */
  stateText(): string {
    return (this.stateCache ??= stateFrame(this.messageList, this.execList));
  }

  /** Performs an operation; errors come back as their answers. */
  async perform(op: Op): Promise<Reply> {
    try {
      switch (op.kind) {
        case "message": {
          await this.cleaning;
          const m = this.storeMessage("user", op.user, op.text);
          return await this.turns.ask(op.user, m.id);
        }
        case "exec": {
          await this.cleaning;
          const { cmd, timeoutMs, cwd, env } = op;
          const end = await this.commands.run({ cmd, timeoutMs, cwd, env, by: op.user ?? "anonymous", source: "user" });
          return this.execReply(end);
        }
        case "interrupt":
          return ok({ interrupted: await this.commands.interrupt(op.execId) });
        case "cancel":
          return ok({ cancelled: this.turns.cancel(op.turnId) });
        case "cleanup":
          return await this.cleanup(op.user ?? "anonymous");
      }
    } catch (e) {
      return (e instanceof ApiError ? e : ApiError.internal(describe(e))).reply();
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

  /** Stores a message, keeps it in the state and tells the sockets. */
  storeMessage(role: Role, userId: string | undefined, text: string, runs?: Run[]): DuetMessage {
    const n = this.store.nextMessage();
    const m: DuetMessage = { id: messageId(n), role, text, ts: Date.now() };
    if (userId !== undefined) m.userId = userId;
    if (runs !== undefined) m.runs = fitRuns(text, runs);
    try {
      this.store.insertMessage(m, n + 1);
    } catch (e) {
      throw ApiError.internal(`the message could not be stored: ${describe(e)}`);
    }
    this.messageList.push(m);
    if (this.messageList.length > STATE_MESSAGES) this.messageList.splice(0, this.messageList.length - STATE_MESSAGES);
    this.stateCache = undefined;
    this.sockets.message(m);
    return m;
  }

  private record(generation: number, record: ExecRecord): void {
    if (generation !== this.gen) return;
    try {
      this.store.insertExec(record);
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

  /** Runs a command for the agent's turn, like an exec by "agent". */
  private async agentRun(cmd: string, signal: AbortSignal): Promise<Run> {
    if (signal.aborted) return { cmd, stdout: "", stderr: "", exitCode: null, error: "the agent's turn was cancelled" };
    return runOf(await this.commands.run({ cmd, by: "agent", source: "agent", signal }));
  }

  /** Cancels the turns, clears history and commands, destroys the sandbox. */
  private async cleanup(by: string): Promise<Reply> {
    this.turns.cleanup();
    this.sockets.all(cleanupFrame(by));
    this.messageList = [];
    this.execList = [];
    this.gen++;
    this.stateCache = undefined;
    const errors: string[] = [];
    try {
      this.store.clear();
    } catch (e) {
      errors.push(`history: ${describe(e)}`);
    }
    let release = () => {};
    const cleaning = new Promise<void>((resolve) => (release = resolve));
    const before = this.cleaning;
    this.cleaning = cleaning;
    try {
      await before;
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
