// The Output/Error block format of agent replies (docs/protocol.md "Output
// blocks"), byte for byte as src/blocks.rs writes it, and its reading back
// (used to show the model its earlier replies).

import { type Run } from "./protocol";
import { charCount, firstChars, trim, trimEnd, trimStart } from "./text";

const OPEN = "<run>";
const CLOSE = "</run>";
/** Characters of output a block shows. */
export const SUMMARY_CHARS = 500;
/** What a block says when a command printed nothing. */
export const NO_OUTPUT = "[no output]";
const SEP = "\n\n";
const OUTPUT_HEAD = "Output (";
const ERROR_HEAD = "Error (";
const HEAD_END = "):";

/**
 * Splits a model's reply into its prose (every `<run>…</run>` removed,
 * trimmed) and its commands (trimmed, empty ones skipped), in order.
 */
export function extractCommands(reply: string): [string, string[]] {
  const [prose, placed] = extractPlaced(reply);
  return [prose, placed.map(([cmd]) => cmd)];
}

/**
 * As extractCommands, each command with where its tag stood in the prose:
 * an offset in characters into the trimmed prose (src/blocks.rs).
 */
export function extractPlaced(reply: string): [string, [string, number][]] {
  let prose = "";
  let proseChars = 0;
  const cmds: [string, number][] = [];
  let rest = reply;
  for (;;) {
    const open = rest.indexOf(OPEN);
    if (open < 0) break;
    const inner = rest.slice(open + OPEN.length);
    const close = inner.indexOf(CLOSE);
    if (close < 0) break;
    const before = rest.slice(0, open);
    prose += before;
    proseChars += charCount(before);
    const cmd = trim(inner.slice(0, close));
    if (cmd !== "") cmds.push([cmd, proseChars]);
    rest = inner.slice(close + CLOSE.length);
  }
  prose += rest;
  const trimmed = trim(prose);
  const lead = charCount(prose) - charCount(trimStart(prose));
  const len = charCount(trimmed);
  return [trimmed, cmds.map(([cmd, at]) => [cmd, Math.min(Math.max(at - lead, 0), len)])];
}

/**
 * The prose of a reply still streaming and its commands' places: as
 * extractPlaced's, less a `<run>` tag that is not closed yet (its command
 * never ran) and what follows it.
 */
export function partialPlaced(raw: string): [string, [string, number][]] {
  const open = raw.lastIndexOf(OPEN);
  return extractPlaced(open > raw.lastIndexOf(CLOSE) ? raw.slice(0, open) : raw);
}

/** The prose of a reply still streaming (see partialPlaced). */
export function partialProse(raw: string): string {
  return partialPlaced(raw)[0];
}

/**
 * The reply with a round added: the reply so far, a blank line, the round's
 * prose, then its blocks; each of `runs` says where in the whole it was asked
 * (`at`, docs/protocol.md "Output blocks").
 */
export function addRound(text: string, prose: string, placed: [string, number][], runs: Run[]): string {
  const base = text === "" ? 0 : prose === "" ? charCount(text) : charCount(text) + 2;
  const proseChars = charCount(prose);
  runs.forEach((run, i) => {
    const place = placed[i];
    if (place) run.at = base + Math.min(place[1], proseChars);
  });
  const joined = text === "" ? prose : prose === "" ? text : `${text}\n\n${prose}`;
  return renderReply(joined, runs);
}

/** The first 500 characters of stdout, else of stderr, else `[no output]`. */
export function summary(stdout: string, stderr: string): string {
  const source = stdout !== "" ? stdout : stderr !== "" ? stderr : undefined;
  if (source === undefined) return NO_OUTPUT;
  return firstChars(source, SUMMARY_CHARS)[0];
}

/** Whether a run is shown as an `Error (` block: the sandbox could not run it at all. */
export function isErrorRun(run: Run): boolean {
  return run.error !== undefined && run.exitCode === null;
}

function blockParts(run: Run): [string, string] {
  return isErrorRun(run) ? [ERROR_HEAD, run.error ?? ""] : [OUTPUT_HEAD, summary(run.stdout, run.stderr)];
}

/**
 * The agent message's text: the prose, then one block per run, the whole
 * trimmed at both ends as the original worker does, so a reply with no prose
 * starts with `Output (` (src/blocks.rs).
 */
export function renderReply(prose: string, runs: Run[]): string {
  let text = prose;
  for (const run of runs) {
    const [head, body] = blockParts(run);
    text += SEP + head + run.cmd + HEAD_END + "\n" + body;
  }
  return trim(text);
}

/** A piece of an agent reply, as a client shows it. */
export type Block =
  | { kind: "prose"; text: string }
  | { kind: "output"; cmd: string; output: string }
  | { kind: "error"; cmd: string; message: string };

/** Splits an agent reply into prose and blocks: from `runs` where present, else by parsing the text. */
export function parseBlocks(text: string, runs?: Run[]): Block[] {
  return runs && runs.length > 0 ? parseWithRuns(text, runs) : parseText(text);
}

function runOutput(run: Run): string {
  if (run.stdout === "" && run.stderr === "") return NO_OUTPUT;
  if (run.stderr === "") return run.stdout;
  if (run.stdout === "") return run.stderr;
  return (run.stdout.endsWith("\n") ? run.stdout : run.stdout + "\n") + run.stderr;
}

function runBlock(run: Run): Block {
  return isErrorRun(run)
    ? { kind: "error", cmd: run.cmd, message: run.error ?? "" }
    : { kind: "output", cmd: run.cmd, output: runOutput(run) };
}

function pushProse(blocks: Block[], prose: string): void {
  const p = trim(prose);
  if (p !== "") blocks.push({ kind: "prose", text: p });
}

function headerOf(run: Run): string {
  return blockParts(run)[0] + run.cmd + HEAD_END;
}

/**
 * Blocks from the runs; the prose is what lies between their blocks in the
 * text. A run that says where it was asked (`at`) is shown there, splitting
 * the prose; one that does not, where its block is (src/blocks.rs).
 */
function parseWithRuns(text: string, runs: Run[]): Block[] {
  const spans = blockSpans(text, runs);
  const blocks: Block[] = [];
  let cursor = 0;
  places(text, runs, spans).forEach((place, i) => {
    pushProseOutside(blocks, text, cursor, place, spans);
    blocks.push(runBlock(runs[i]));
    cursor = place;
  });
  pushProseOutside(blocks, text, cursor, text.length, spans);
  return blocks;
}

type Span = [number, number] | undefined;

/** Where each run's block lies in the text, from its separator to the end of its body. */
function blockSpans(text: string, runs: Run[]): Span[] {
  const spans: Span[] = [];
  let cursor = 0;
  runs.forEach((run, i) => {
    const body = blockParts(run)[1];
    const found = findHeader(text, cursor, headerOf(run));
    if (!found) {
      spans.push(undefined);
      return;
    }
    const [sepStart, bodyStart] = found;
    let end: number;
    if (text.startsWith(body, bodyStart)) end = bodyStart + body.length;
    else if (text.startsWith(trimEnd(body), bodyStart)) end = bodyStart + trimEnd(body).length;
    else {
      const next = runs[i + 1];
      const nextAt = next ? findHeader(text, bodyStart, headerOf(next)) : undefined;
      end = nextAt ? nextAt[0] : text.length;
    }
    spans.push([sepStart, end]);
    cursor = end;
  });
  return spans;
}

/** Where in the text each run is shown, in order: its `at`, else its block's place, else the last one's. */
function places(text: string, runs: Run[], spans: Span[]): number[] {
  let last = 0;
  return runs.map((run, i) => {
    let place: number | undefined;
    const at = run.at === undefined ? undefined : codeUnitOffset(text, run.at);
    if (at !== undefined) {
      const inside = spans.find((s) => s !== undefined && s[0] < at && at < s[1]);
      place = inside ? inside[1] : at;
    }
    place ??= spans[i]?.[0] ?? last;
    last = Math.max(place, last);
    return last;
  });
}

/** The offset in UTF-16 code units of the `chars`-th character of the text; undefined beyond its end. */
function codeUnitOffset(text: string, chars: number): number | undefined {
  if (!Number.isSafeInteger(chars) || chars < 0) return undefined;
  let n = 0;
  let at = 0;
  for (const c of text) {
    if (n === chars) return at;
    n++;
    at += c.length;
  }
  return n === chars ? at : undefined;
}

/** Pushes, as one piece of prose, the text from `from` to `to` outside every block. */
function pushProseOutside(blocks: Block[], text: string, from: number, to: number, spans: Span[]): void {
  const parts: string[] = [];
  let at = from;
  for (const span of spans) {
    if (!span || span[1] <= at || span[0] >= to) continue;
    if (span[0] > at) parts.push(text.slice(at, span[0]));
    at = Math.max(span[1], at);
  }
  if (at < to) parts.push(text.slice(at, to));
  pushProse(blocks, parts.map(trim).filter((p) => p !== "").join("\n\n"));
}

/**
 * Finds `header` at or after `from`, at the start of the text or after a
 * blank line, followed by a newline or the end: where its separator and its
 * body start.
 */
function findHeader(text: string, from: number, header: string): [number, number] | undefined {
  let search = from;
  for (;;) {
    const at = text.indexOf(header, search);
    if (at < 0) return undefined;
    const end = at + header.length;
    const bodyStart = text.startsWith("\n", end) ? end + 1 : end === text.length ? end : undefined;
    if (bodyStart !== undefined) {
      if (at === 0 && from === 0) return [0, bodyStart];
      if (at >= from + SEP.length && text.slice(0, at).endsWith(SEP)) return [at - SEP.length, bodyStart];
    }
    search = at + 1;
  }
}

interface Header {
  sepStart: number;
  bodyStart: number;
  isError: boolean;
  cmd: string;
}

function nextHeader(text: string, from: number): Header | undefined {
  if (from === 0 && (text.startsWith(OUTPUT_HEAD) || text.startsWith(ERROR_HEAD))) {
    const h = headerAt(text, 0, 0);
    if (h) return h;
  }
  let at = from;
  for (;;) {
    const o = text.indexOf("\n\nOutput (", at);
    const e = text.indexOf("\n\nError (", at);
    if (o < 0 && e < 0) return undefined;
    const sepStart = o < 0 ? e : e < 0 ? o : Math.min(o, e);
    const h = headerAt(text, sepStart, sepStart + SEP.length);
    if (h) return h;
    at = sepStart + 1;
  }
}

function headerAt(text: string, sepStart: number, start: number): Header | undefined {
  const isError = text.startsWith(ERROR_HEAD, start);
  const cmdStart = start + (isError ? ERROR_HEAD.length : OUTPUT_HEAD.length);
  const end = findHeadEnd(text, cmdStart);
  if (!end) return undefined;
  return { sepStart, bodyStart: end[1], isError, cmd: text.slice(cmdStart, end[0]) };
}

function findHeadEnd(text: string, from: number): [number, number] | undefined {
  let search = from;
  for (;;) {
    const at = text.indexOf(HEAD_END, search);
    if (at < 0) return undefined;
    const end = at + HEAD_END.length;
    if (end === text.length) return [at, end];
    if (text.startsWith("\n", end)) return [at, end + 1];
    search = at + 1;
  }
}

function parseText(text: string): Block[] {
  const blocks: Block[] = [];
  let cursor = 0;
  let current: Header | undefined;
  for (;;) {
    const next = nextHeader(text, cursor);
    const piece = text.slice(cursor, next ? next.sepStart : text.length);
    if (!current) {
      if (piece !== "") blocks.push({ kind: "prose", text: piece });
    } else if (current.isError) {
      blocks.push({ kind: "error", cmd: current.cmd, message: piece });
    } else {
      blocks.push({ kind: "output", cmd: current.cmd, output: piece });
    }
    if (!next) return blocks;
    cursor = next.bodyStart;
    current = next;
  }
}
