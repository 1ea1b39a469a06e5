// What a turn costs (src/ai/usage.rs): each model call's tokens as the
// service reported them (`usage`, asked for with `stream_options`), or
// estimated at about 4 bytes a token when it gave none, summed over the
// turn's rounds; and the models a room may choose (src/ai/agent.rs).

import type { AgentState, Usage } from "./protocol";
import type { ChatMessage, UsageReport } from "./model";

/** Bytes counted as one token by an estimate. */
export const BYTES_PER_TOKEN = 4;

const encoder = new TextEncoder();

/** Tokens of `bytes` bytes, estimated (rounded up). */
export function estimate(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

/** The bytes a conversation sends (its messages' text). */
export function promptBytes(messages: ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + encoder.encode(m.content).length, 0);
}

/** `total` with one more round: the service's counts in `report`, else estimated from what was sent and answered. */
export function addRound(total: Usage | undefined, report: UsageReport, sentBytes: number, answer: string): Usage {
  const round: Usage = report.tokens
    ? { promptTokens: report.tokens.prompt, completionTokens: report.tokens.completion, rounds: 1 }
    : { promptTokens: estimate(sentBytes), completionTokens: estimate(encoder.encode(answer).length), rounds: 1, estimated: true };
  if (!total) return round;
  const sum: Usage = {
    promptTokens: total.promptTokens + round.promptTokens,
    completionTokens: total.completionTokens + round.completionTokens,
    rounds: total.rounds + round.rounds,
  };
  if (total.estimated || round.estimated) sum.estimated = true;
  return sum;
}

/** What the agent's settings say of models (agentConfig's). */
export interface ModelSettings {
  model?: string;
  /** DUET_AI_MODELS, cleaned (empty: `model` alone). */
  models: string[];
  steps: number;
  /** Time a turn may take, all its rounds. */
  turnMs: number;
  contextTokens: number;
}

/** DUET_AI_MODELS as a list: trimmed, no empty or repeated names. */
export function parseModels(text: string | undefined): string[] {
  const models: string[] = [];
  for (const name of (text ?? "").split(",").map((m) => m.trim())) {
    if (name !== "" && !models.includes(name)) models.push(name);
  }
  return models;
}

/** The models a room may choose, the default first. */
export function allowedModels(s: ModelSettings): string[] {
  if (s.models.length > 0) return [...s.models];
  return s.model === undefined ? [] : [s.model];
}

/** The model of a room that chose `chosen`: its choice while allowed, else the default. */
export function roomModel(s: ModelSettings, chosen: string | undefined): string | undefined {
  const allowed = allowedModels(s);
  return chosen !== undefined && allowed.includes(chosen) ? chosen : allowed[0];
}

/** The room state's `agent`. */
export function agentState(s: ModelSettings, chosen: string | undefined): AgentState {
  return {
    model: roomModel(s, chosen) ?? null,
    models: allowedModels(s),
    steps: Math.max(1, s.steps),
    turnSecs: Math.round(s.turnMs / 1000),
    contextTokens: s.contextTokens,
  };
}

/** What `details.model` says of a model the backend does not allow (src/server/ops/model.rs). */
export function notAllowed(allowed: string[]): string {
  return allowed.length === 0 ? "cannot be chosen: this backend lists no models (--ai-models)" : `must be one of ${allowed.join(", ")}`;
}
