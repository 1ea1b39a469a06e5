// What is sent to the model, bounded (docs/protocol.md "What the model is
// sent"; src/ai/fit.rs): the system prompt, AGENTS.md and the question
// always; then this turn's rounds and the newest of the room's history that
// fit in the context's tokens, counted at 4 bytes a token; what is left out
// is said in one line.

import type { ChatMessage } from "./model";

/** Tokens a message costs besides its text (its role, the framing). */
const MESSAGE_TOKENS = 4;
const encoder = new TextEncoder();

/** Tokens of `text`, counted roughly: 4 bytes (UTF-8) a token. */
export function tokens(text: string): number {
  return Math.ceil(encoder.encode(text).length / 4);
}

const cost = (m: ChatMessage) => tokens(m.content) + MESSAGE_TOKENS;
const total = (ms: ChatMessage[]) => ms.reduce((sum, m) => sum + cost(m), 0);

/** The parts of a turn's conversation. */
export interface Context {
  /** The system prompt and AGENTS.md: always sent. */
  head: ChatMessage[];
  /** The room's messages before the question, oldest first. */
  history: ChatMessage[];
  /** The terminal's screen and the question: always sent. */
  question: ChatMessage[];
  /** This turn's rounds: the model's answer and its results, in turn. */
  rounds: ChatMessage[];
}

/** The one line that says what was left out to fit the context. */
function leftOutNote(messages: number, rounds: number): string {
  const parts: string[] = [];
  if (messages > 0) parts.push(`the room's ${messages} oldest messages`);
  if (rounds > 0) parts.push(`this turn's first ${rounds} rounds`);
  return `[left out to fit the model's context: ${parts.join(" and ")}]`;
}

/**
 * The messages to send within `budget` tokens: the head, the question and
 * the last round always; the older rounds and the history newest first as
 * long as they fit, a note saying what was left out.
 */
export function fitted(c: Context, budget: number): ChatMessage[] {
  const noteCost = tokens(leftOutNote(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)) + MESSAGE_TOKENS;
  const fixed = total(c.head) + total(c.question) + noteCost;
  const lastRound = Math.max(0, c.rounds.length - 2);
  let room = Math.max(0, budget - fixed - total(c.rounds.slice(lastRound)));
  let roundsFrom = lastRound;
  while (roundsFrom >= 2) {
    const pair = total(c.rounds.slice(roundsFrom - 2, roundsFrom));
    if (pair > room) break;
    room -= pair;
    roundsFrom -= 2;
  }
  let historyFrom = c.history.length;
  if (roundsFrom === 0) {
    while (historyFrom > 0) {
      const one = cost(c.history[historyFrom - 1]);
      if (one > room) break;
      room -= one;
      historyFrom--;
    }
  }
  const out = [...c.head];
  if (historyFrom > 0 || roundsFrom > 0) out.push({ role: "user", content: leftOutNote(historyFrom, roundsFrom / 2) });
  return [...out, ...c.history.slice(historyFrom), ...c.question, ...c.rounds.slice(roundsFrom)];
}

/** An output cut to its first and last `keep` characters each, saying how much was cut between them. */
export function headAndTail(output: string, keep: number): string {
  const chars = Array.from(output);
  if (chars.length <= keep * 2) return output;
  const cut = chars.length - 2 * keep;
  return `${chars.slice(0, keep).join("")}\n[… ${cut} characters cut …]\n${chars.slice(chars.length - keep).join("")}`;
}
