// What a turn has done (src/ai/turn.rs's `Progress`): the reply of its
// finished rounds and the round under way, and the reply it is stored
// with when it ends whole, cancelled, or with its model failed after some
// rounds (their text, outputs and file lines kept, then a sentence).

import { addRound, partialPlaced } from "./blocks";
import type { Run, Usage } from "./protocol";

/** What a turn produced: the agent message's text and runs, and what it cost. */
export interface AgentReply {
  text: string;
  runs: Run[];
  /** What its model calls cost (absent: it made none). */
  usage?: Usage;
}

/** How far a turn got: its finished rounds' reply, and the round under way. */
export interface Progress {
  /** The reply of the finished rounds (prose and blocks). */
  text: string;
  runs: Run[];
  /** What the model streamed of the current round so far, and the commands it ran. */
  raw: string;
  roundRuns: Run[];
  /** What the model calls so far cost (each call is a round). */
  usage?: Usage;
  /** The model's answers so far (the one under way counted). */
  rounds: number;
  /** The rounds that ended (their answers came whole and were acted on). */
  ended: number;
  /** What the answers that came whole cost. */
  answered?: Usage;
}

/** The reply a turn would store if it ended now (a cancel). */
export function partialReply(p: Progress): AgentReply {
  const [prose, placed] = partialPlaced(p.raw);
  const roundRuns = p.roundRuns.map((run) => ({ ...run }));
  return { text: addRound(p.text, prose, placed, roundRuns), runs: [...p.runs, ...roundRuns], ...usageOf(p) };
}

/** The reply of a turn whose model failed: the ended rounds (not what the failed answer had streamed), then a sentence saying so; what their answers cost. */
export function failedReply(p: Progress): AgentReply {
  const unit = p.ended === 1 ? "round" : "rounds";
  const sentence = `The agent stopped after ${p.ended} ${unit}: the model failed; ask it to go on.`;
  return { text: p.text === "" ? sentence : `${p.text}\n\n${sentence}`, runs: p.runs, ...withUsage(p.answered) };
}

/** `usage` of the reply: the calls' counts summed, the rounds the loop counted. */
export function usageOf(p: Progress): { usage?: Usage } {
  return p.usage ? { usage: { ...p.usage, rounds: p.rounds } } : {};
}

/** The sentence a reply ends with when a budget stopped the turn. */
export function budgetSentence(amount: number, unit: string): string {
  return `The agent stopped after ${amount} ${unit}, the most a turn may take here; ask it to go on.`;
}

/** `runs` of an agent message: absent when it ran none. */
export function withRuns(runs: Run[]): { runs?: Run[] } {
  return runs.length > 0 ? { runs } : {};
}

/** `usage` of an agent message: absent when the turn called no model. */
export function withUsage(usage: Usage | undefined): { usage?: Usage } {
  return usage ? { usage } : {};
}
