// The agent's turn: one at a time per room, in the order messages came
// (queued turns see the answers before them); each streams the model's
// reply to the room, runs its commands and file tools and gives their
// results back round after round until the model answers without any, or
// a budget ends it (DUET_AGENT_STEPS rounds, DUET_AGENT_TURN_SECS)
// (src/ai/turn.rs, src/server/room/turn.rs). A cancelled turn keeps what
// it had streamed and run; one whose model fails after a round, what the
// ended rounds did (progress.ts).

import { addRound, extractPlaced } from "./blocks";
import { budgetSentence, failedReply, partialReply, usageOf, withRuns, withUsage, type AgentReply, type Progress } from "./progress";
import { projectContext, type ProjectFiles } from "./context";
import { countVar, positiveVar, type Env } from "./env";
import { ApiError, describe, ok, okText, type Reply } from "./http";
import { action, runFileCall, type Action } from "./filetools";
import { fitted, type Context } from "./fit";
import { ModelError, chat, discoverModel, type ChatMessage, type ModelConfig, type UsageReport } from "./model";
import { conversation, resultsNote, type Outcome, type TerminalScreen } from "./prompt";
import { STORED_OUTPUT_CAP, aiFrame, messageResponseText, type DuetMessage, type RoomEvent, type Run, type Usage } from "./protocol";
import { capText, randomHex } from "./text";
import { recordText } from "./records";
import { ToolOffer, toolsMode, type ToolsMode } from "./tools";
import { addRound as addUsage, parseModels, promptBytes } from "./usage";

/** Shortest time between two `delta` frames of a turn. */
const DELTA_INTERVAL_MS = 25;
/** What the room is told when no model is configured. */
export const NO_MODEL_TEXT =
  "No model is configured on this backend. Set the vars DUET_AI_URL (an OpenAI-compatible base URL; " +
  "in production Workers AI's: https://api.cloudflare.com/client/v4/accounts/ACCOUNT_ID/ai/v1) and " +
  "DUET_AI_MODEL (e.g. @cf/meta/llama-3.3-70b-instruct-fp8-fast) in wrangler.jsonc, and the key with " +
  "`wrangler secret put DUET_AI_KEY`; see the README.";
export const CANCELLED_TEXT = "the agent's turn was cancelled";
/** Text of the answer to turns dropped by a cleanup. */
export const CLEANED = "the room was cleaned up";

/**
 * Why a turn ended without a reply; `text` is what the room's `system`
 * message says. `done`: the model failed after one round or more had
 * ended, and this is what they did (the reply ending with a sentence
 * saying the model failed).
 */
export class TurnError extends Error {
  constructor(
    readonly text: string,
    readonly done?: AgentReply,
  ) {
    super(text);
  }
}

export interface AgentConfig {
  url?: string;
  model?: string;
  /** The models a room's owner may choose (DUET_AI_MODELS), the default first; empty: `model` alone. */
  models: string[];
  key?: string;
  /** Rounds a turn may take. */
  steps: number;
  /** Time a turn may take, all its rounds: checked before each round. */
  turnMs: number;
  /** Tokens a request to the model may hold. */
  contextTokens: number;
  timeoutMs: number;
  connectTimeoutMs: number;
  /** Bytes of /workspace/AGENTS.md sent each turn. */
  agentsMdBytes: number;
  /** Whether the model is offered the `run` tool. */
  tools: ToolsMode;
}

export function agentConfig(env: Env): AgentConfig {
  return {
    url: env.DUET_AI_URL?.trim() || undefined,
    model: env.DUET_AI_MODEL?.trim() || undefined,
    models: parseModels(env.DUET_AI_MODELS),
    key: env.DUET_AI_KEY?.trim() || undefined,
    steps: positiveVar(env.DUET_AGENT_STEPS, 10),
    turnMs: positiveVar(env.DUET_AGENT_TURN_SECS, 600) * 1000,
    contextTokens: positiveVar(env.DUET_AI_CONTEXT_TOKENS, 32_000),
    timeoutMs: positiveVar(env.DUET_AI_TIMEOUT_SECS, 120) * 1000,
    connectTimeoutMs: positiveVar(env.DUET_AI_CONNECT_TIMEOUT_SECS, 30) * 1000,
    agentsMdBytes: countVar(env.DUET_AGENTS_MD_BYTES, 16_384),
    tools: toolsMode(env.DUET_AI_TOOLS),
  };
}

/** What a turn may do in its room. */
export interface TurnHost {
  /** Broadcast a frame (`duet_ai`) to the room. */
  emit(frame: string): void;
  /** Run one command of turn `turnId` as the agent for socket `byConnection`'s turn; resolves when it ended. */
  run(cmd: string, signal: AbortSignal, turnId: string, byConnection?: string): Promise<Run>;
  /** The shared terminal's screen as text, while one runs. */
  screen(): TerminalScreen | undefined;
  /** The workspace, for AGENTS.md, the files a question names and `read_file`. */
  files(): ProjectFiles;
  /** The model the room's turns use now (undefined: the configuration's, or the service's first). */
  model(): string | undefined;
  /** The room's policy for turn `turnId` doing `what` (`edit_file PATH`): why not, or undefined once it may. */
  ask(what: string, signal: AbortSignal, turnId: string): Promise<string | undefined>;
  /** Writes a workspace file for turn `turnId` (its checkpoint first): why it could not, or undefined. */
  writeFile(path: string, bytes: Uint8Array, signal: AbortSignal, turnId: string): Promise<string | undefined>;
  /** The agent wrote or edited a file: the `edit` record, stored after the turn's reply. */
  edited(event: RoomEvent): void;
}

interface TurnContext {
  config: AgentConfig;
  /** Whether the room still offers the model the `run` tool. */
  tools: ToolOffer;
  host: TurnHost;
  turnId: string;
  signal: AbortSignal;
  /** The socket whose message began the turn. */
  byConnection?: string;
  progress: Progress;
}

/** Resolves with `promise`, or rejects with the turn's cancellation first. */
function unlessCancelled<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new TurnError(CANCELLED_TEXT));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new TurnError(CANCELLED_TEXT));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

function asTurnError(e: unknown): TurnError {
  if (e instanceof TurnError) return e;
  if (e instanceof ModelError) return new TurnError(`Model error: ${e.message}`);
  return new TurnError(`Model error: ${describe(e)}`);
}

/** The room's model (`chosen`), else the configuration's, else the first the service lists. */
async function resolveModel(config: AgentConfig, signal: AbortSignal, chosen?: string): Promise<ModelConfig> {
  if (!config.url) throw new TurnError(NO_MODEL_TEXT);
  const model = chosen ?? config.model ?? (await discoverModel(config.url, config.key, signal));
  if (!model) {
    throw new TurnError(`Model error: the service at ${config.url} lists no model; set DUET_AI_MODEL`);
  }
  return { base: config.url, model, key: config.key, connectTimeoutMs: config.connectTimeoutMs };
}

/** Runs one turn: `history` is the room's messages, the question last. */
export async function runTurn(t: TurnContext, history: DuetMessage[]): Promise<AgentReply> {
  const emit = (phase: "start" | "end") =>
    t.host.emit(aiFrame(phase, t.turnId, undefined, undefined, phase === "start" ? t.byConnection : undefined));
  const fail = (e: unknown): TurnError => {
    const err = asTurnError(e);
    t.host.emit(aiFrame("error", t.turnId, undefined, err.text));
    return err;
  };
  emit("start");
  let model: ModelConfig;
  try {
    model = await unlessCancelled(resolveModel(t.config, t.signal, t.host.model()), t.signal);
  } catch (e) {
    throw fail(e);
  }
  const deadline = Date.now() + t.config.turnMs;
  const question = history[history.length - 1];
  let context: Context;
  try {
    const project = await unlessCancelled(
      projectContext(t.host.files(), question?.role === "user" ? question.text : undefined, t.config.agentsMdBytes, t.signal),
      t.signal,
    );
    const screen = t.host.screen();
    const all = conversation(history, screen, project);
    const headLen = project.instructions !== undefined ? 2 : 1;
    const questionLen = Math.min(screen !== undefined ? 2 : 1, all.length - headLen);
    context = {
      head: all.slice(0, headLen),
      history: all.slice(headLen, all.length - questionLen),
      question: all.slice(all.length - questionLen),
      rounds: [],
    };
  } catch (e) {
    throw fail(e);
  }
  const p = t.progress;
  const steps = Math.max(1, t.config.steps);
  for (let round = 0; round < steps; round++) {
    if (round > 0) {
      if (Date.now() >= deadline) {
        sayAfter(t, budgetSentence(Math.round(t.config.turnMs / 1000), "seconds"));
        break;
      }
      emit("start");
    }
    p.raw = "";
    p.roundRuns = [];
    // A round counts once its model call begins (a cancelled one cost tokens too).
    p.rounds++;
    let later: Action[];
    try {
      // Later rounds' text streams after a blank line.
      later = await streamRound(t, model, fitted(context, t.config.contextTokens), round > 0 ? "\n\n" : "");
    } catch (e) {
      const err = fail(e);
      // What the ended rounds did stays.
      if (p.ended > 0 && !t.signal.aborted) throw new TurnError(err.text, failedReply(p));
      throw err;
    }
    p.answered = p.usage;
    const [prose, placed] = extractPlaced(p.raw);
    const cmds = placed.map(([cmd]) => cmd);
    if (round === 0 && prose === "" && cmds.length === 0 && later.length === 0) {
      throw fail(new TurnError("Model error: the model answered with an empty reply"));
    }
    emit("end");
    const outcomes: Outcome[] = [];
    for (const cmd of cmds) await runCommand(t, cmd, outcomes);
    for (const a of later) await act(t, a, outcomes);
    const raw = p.raw;
    const [roundProse, roundPlaced] = extractPlaced(raw);
    const roundRuns = p.roundRuns;
    p.text = addRound(p.text, roundProse, roundPlaced, roundRuns);
    p.runs.push(...roundRuns);
    p.raw = "";
    p.roundRuns = [];
    p.ended++;
    if (outcomes.length === 0) break;
    context.rounds.push({ role: "assistant", content: raw }, { role: "user", content: resultsNote(outcomes) });
    // One round is the original's turn: it ends so, saying nothing.
    if (round + 1 === steps && steps > 1) sayAfter(t, budgetSentence(steps, "rounds"));
  }
  return { text: p.text, runs: p.runs, ...usageOf(p) };
}

/** Streams `text` to the room as a round of its own. */
function streamAlone(t: TurnContext, live: string): void {
  t.host.emit(aiFrame("start", t.turnId, undefined, undefined, t.byConnection));
  t.host.emit(aiFrame("delta", t.turnId, live));
  t.host.emit(aiFrame("end", t.turnId));
}

/** Adds `text` to the round under way (after `sep` when it follows something) and streams it. */
function say(t: TurnContext, text: string, sep: string): void {
  const p = t.progress;
  const live = p.raw === "" && p.text === "" ? text : sep + text;
  p.raw = p.raw === "" ? text : p.raw + sep + text;
  streamAlone(t, live);
}

/** Adds a paragraph after the finished rounds and streams it. */
function sayAfter(t: TurnContext, text: string): void {
  const p = t.progress;
  streamAlone(t, p.text === "" ? text : `\n\n${text}`);
  p.text = p.text === "" ? text : `${p.text}\n\n${text}`;
}

/** Runs one command through the room (its policy first). */
async function runCommand(t: TurnContext, cmd: string, outcomes: Outcome[]): Promise<void> {
  const run = capped(await unlessCancelled(t.host.run(cmd, t.signal, t.turnId, t.byConnection), t.signal));
  t.progress.roundRuns.push(run);
  outcomes.push({ run });
}

/** Does a tool call that came after the answer's text: a command (its tag added first) or a file tool (its line after). */
async function act(t: TurnContext, a: Action, outcomes: Outcome[]): Promise<void> {
  if (a.kind === "run") {
    say(t, `<run>${a.cmd}</run>`, "\n\n");
    await runCommand(t, a.cmd, outcomes);
    return;
  }
  const host = {
    files: () => t.host.files(),
    ask: (what: string) => t.host.ask(what, t.signal, t.turnId),
    write: (path: string, bytes: Uint8Array) => t.host.writeFile(path, bytes, t.signal, t.turnId),
    edited: (event: RoomEvent) => t.host.edited(event),
  };
  const outcome = await unlessCancelled(runFileCall(host, a.call, t.turnId), t.signal);
  if (outcome.line !== undefined) say(t, outcome.line, "\n\n");
  outcomes.push({ file: outcome });
}

/**
 * Streams one answer of the model to the room, `lead` before its first
 * piece, at most one `delta` every 25 ms, into the progress's `raw`
 * (without `lead`). The `run` calls before any other tool call count as
 * their tags written at the end of the text; returns the calls from the
 * first other one on, to be done in order after the text's commands.
 */
async function streamRound(t: TurnContext, model: ModelConfig, chatLog: ChatMessage[], lead: string): Promise<Action[]> {
  const later: Action[] = [];
  const ctrl = new AbortController();
  const onCancel = () => ctrl.abort();
  t.signal.addEventListener("abort", onCancel, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort();
  }, t.config.timeoutMs);
  const ended = new Promise<never>((_, reject) =>
    ctrl.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }),
  );
  ended.catch(() => {});
  let text = "";
  let pending = "";
  let lastSent: number | undefined;
  // What the call cost: counted once it ended, broke off or was cancelled.
  const report: UsageReport = {};
  const sent = promptBytes(chatLog);
  let flushTimer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (flushTimer !== undefined) clearTimeout(flushTimer);
    flushTimer = undefined;
    if (pending === "") return;
    t.host.emit(aiFrame("delta", t.turnId, pending));
    pending = "";
    lastSent = Date.now();
  };
  try {
    const pieces = await Promise.race([chat(model, [...chatLog], ctrl.signal, t.tools, report), ended]);
    for (;;) {
      const next = await Promise.race([pieces.next(), ended]);
      if (next.done) break;
      let piece: string;
      if (typeof next.value === "string") piece = next.value;
      else {
        const a = action(next.value);
        if (a === undefined) continue;
        if (a.kind !== "run" || later.length > 0) {
          later.push(a);
          continue;
        }
        piece = `<run>${a.cmd}</run>`;
      }
      if (text === "") pending += lead;
      text += piece;
      t.progress.raw = text;
      pending += piece;
      const now = Date.now();
      if (lastSent === undefined || now >= lastSent + DELTA_INTERVAL_MS) flush();
      else flushTimer ??= setTimeout(flush, lastSent + DELTA_INTERVAL_MS - now);
    }
    flush();
    return later;
  } catch (e) {
    if (t.signal.aborted) {
      // The room sees all the cancelled turn keeps.
      flush();
      throw new TurnError(CANCELLED_TEXT);
    }
    if (flushTimer !== undefined) clearTimeout(flushTimer);
    if (timedOut) {
      throw new TurnError(`Model error: the model did not finish within ${Math.round(t.config.timeoutMs / 1000)} seconds`);
    }
    flush();
    throw e;
  } finally {
    clearTimeout(timer);
    t.signal.removeEventListener("abort", onCancel);
    ctrl.abort();
    t.progress.usage = addUsage(t.progress.usage, report, sent, text);
  }
}

/** A run with each stream cut to what a stored output keeps. */
function capped(run: Run): Run {
  const [stdout, cutOut] = capText(run.stdout, STORED_OUTPUT_CAP);
  const [stderr, cutErr] = capText(run.stderr, STORED_OUTPUT_CAP);
  const truncated = Boolean(run.truncated) || cutOut || cutErr;
  return { ...run, stdout, stderr, ...(truncated && { truncated: true }) };
}

/** A message a room stores: all but its id and time. */
export type NewMessage = Omit<DuetMessage, "id" | "ts">;

/** What the queue needs of its room. */
export interface TurnRoom {
  readonly config: AgentConfig;
  messages(): DuetMessage[];
  /** Stores a message and broadcasts it; throws `ApiError` (500). */
  storeMessage(m: NewMessage): DuetMessage;
  host: TurnHost;
}

interface Pending {
  user?: string;
  /** The id of the question: the turn sees the history up to it. */
  upto: string;
  /** The socket that sent it. */
  connection?: string;
  answer(reply: Reply): void;
}

interface Current {
  id: string;
  ctrl: AbortController;
  pending: Pending;
  progress: Progress;
  /** Set by cleanup: the turn's end is answered but not stored. */
  discarded: boolean;
  /** Who cancelled it. */
  cancelledBy?: string;
  /** Records of what happened to its commands (interrupts), stored after its reply. */
  afterReply: [RoomEvent, string][];
  /** Resolves once its end is stored (and answered). */
  ended: Promise<void>;
  end(): void;
}

/** The answer of a turn that ended without a reply. */
export function noReply(error: string, messages: DuetMessage[]): Reply {
  return okText(messageResponseText(null, error, messages));
}

/** The room's turns: the one running and those waiting, in order. */
export class Turns {
  private readonly waiting: Pending[] = [];
  private current?: Current;
  /** For the life of the room's object: a model that refused the tool gets tags. */
  private readonly tools: ToolOffer;

  constructor(private readonly room: TurnRoom) {
    this.tools = new ToolOffer(room.config.tools);
  }

  /** Queues the turn of the stored question `upto` (sent by socket `connection`); resolves with its answer. */
  ask(user: string | undefined, upto: string, connection?: string): Promise<Reply> {
    return new Promise((answer) => {
      this.waiting.push({ user, upto, connection, answer });
      this.next();
    });
  }

  /** Ends the current turn (if `turnId` names it, or none is named); `by` cancelled it. */
  cancel(turnId?: string, by?: string): boolean {
    const c = this.current;
    if (!c || (turnId !== undefined && turnId !== c.id) || c.ctrl.signal.aborted) return false;
    c.cancelledBy = by;
    c.ctrl.abort();
    return true;
  }

  /** Cancels the current turn (`by` cancelled it: a restore) and resolves once its `cancel` record is stored. */
  async stop(by: string): Promise<void> {
    const c = this.current;
    if (!c) return;
    this.cancel(c.id, by);
    await c.ended;
  }

  /** Cancels the current turn (answered, not stored) and answers the waiting ones. */
  cleanup(): void {
    this.cancel();
    if (this.current) this.current.discarded = true;
    for (const p of this.waiting.splice(0)) p.answer(noReply(CLEANED, []));
  }

  private next(): void {
    if (this.current) return;
    const pending = this.waiting.shift();
    if (!pending) return;
    const progress: Progress = { text: "", runs: [], raw: "", roundRuns: [], rounds: 0, ended: 0 };
    let end = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    const current: Current = { id: `t${randomHex()}`, ctrl: new AbortController(), pending, progress, discarded: false, afterReply: [], ended, end };
    this.current = current;
    // Everything said so far, replies to earlier turns included, but not
    // what people asked after this message (their turns come later); this
    // turn's message last.
    const history: DuetMessage[] = [];
    let asked: DuetMessage | undefined;
    for (const m of this.room.messages()) {
      if (m.id === pending.upto) asked = m;
      else if (!(m.role === "user" && m.id > pending.upto)) history.push(m);
    }
    if (asked) history.push(asked);
    const context: TurnContext = {
      config: this.room.config,
      tools: this.tools,
      host: this.room.host,
      turnId: current.id,
      signal: current.ctrl.signal,
      byConnection: pending.connection,
      progress,
    };
    runTurn(context, history).then(
      (reply) => this.done(current, reply, undefined),
      (e) => this.done(current, undefined, asTurnError(e)),
    );
  }

  /** Keeps a record about the current turn (`event` saying `text`) for after its reply; false when no turn runs. */
  afterReply(event: RoomEvent, text: string): boolean {
    const c = this.current;
    if (!c || c.discarded) return false;
    c.afterReply.push([event, text]);
    return true;
  }

  /** Stores the records kept for after the turn's reply. */
  private storeAfterReply(current: Current): void {
    for (const [event, text] of current.afterReply) {
      this.room.storeMessage({ role: "system", userId: event.by, text, event });
    }
  }

  private done(current: Current, reply: AgentReply | undefined, error: TurnError | undefined): void {
    if (this.current !== current) return;
    this.current = undefined;
    const { answer, user } = current.pending;
    try {
      if (current.discarded) answer(noReply(CLEANED, this.room.messages()));
      else if (current.cancelledBy !== undefined) {
        // What had streamed and run stays (all of it, if the turn ended as it was cancelled), then who cancelled it.
        const by = current.cancelledBy;
        const partial = reply ?? partialReply(current.progress);
        this.room.storeMessage({ role: "agent", text: partial.text, ...withRuns(partial.runs), cancelledBy: by, ...withUsage(partial.usage) });
        const event: RoomEvent = { kind: "cancel", by, turnId: current.id };
        this.room.storeMessage({ role: "system", userId: by, text: recordText(event), event });
        this.storeAfterReply(current);
        answer(noReply(CANCELLED_TEXT, this.room.messages()));
      } else if (error?.done) {
        // The model failed after rounds that did something: they stay, then the model's error.
        const done = error.done;
        this.room.storeMessage({ role: "agent", text: done.text, ...withRuns(done.runs), ...withUsage(done.usage) });
        this.room.storeMessage({ role: "system", userId: user, text: error.text });
        this.storeAfterReply(current);
        answer(noReply(error.text, this.room.messages()));
      } else if (reply) {
        this.room.storeMessage({ role: "agent", text: reply.text, ...withRuns(reply.runs), ...withUsage(reply.usage) });
        this.storeAfterReply(current);
        answer(okText(messageResponseText(reply.text, undefined, this.room.messages())));
      } else {
        const text = error?.text ?? CANCELLED_TEXT;
        this.room.storeMessage({ role: "system", userId: user, text });
        this.storeAfterReply(current);
        answer(noReply(text, this.room.messages()));
      }
    } catch (e) {
      answer((e instanceof ApiError ? e : ApiError.internal(describe(e))).reply());
    }
    current.end();
    this.next();
  }
}
