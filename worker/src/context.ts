// What the agent knows of the project (docs/protocol.md "What the agent
// knows of the project"): /workspace/AGENTS.md, read afresh each turn and
// sent as the second `system` message, and the workspace files a question
// names with `@path`, inlined into the question as the model sees it; both
// read through the sandbox seam, with the texts duet serve sends
// (src/ai/context.rs).

import { describe } from "./http";
import { pathComponents } from "./files";
import { BadPath, SandboxStarting, type RoomSandbox } from "./sandbox/types";

/** What the context reads of the room's workspace. */
export type ProjectFiles = Pick<RoomSandbox, "readFile" | "listFiles">;

/** Bytes of one `@path` file inlined, and how many files a question inlines. */
export const MENTION_BYTES = 32_768;
export const MENTION_FILES = 4;
/** How long a read waits for a starting sandbox (as the agent's commands do). */
const START_WAIT_MS = 120_000;

const AGENTS_MD = "AGENTS.md";
const AGENTS_HEADER = "[the project's instructions: /workspace/AGENTS.md]";

/** The context of a turn: the second system message, and what the question gets appended. */
export interface ProjectContext {
  instructions?: string;
  attachments: string;
}

/** Reads the turn's context: AGENTS.md (at most `agentsMdBytes`) and the files `question` names. */
export async function projectContext(files: ProjectFiles, question: string | undefined, agentsMdBytes: number, signal: AbortSignal): Promise<ProjectContext> {
  const read = (path: string) => whenStarted(() => readWorkspaceFile(files, path), signal);
  const agents = await whenStarted(() => readAgentsMd(files), signal);
  const instructions = agents && agentsNote(agents, agentsMdBytes);
  let attachments = "";
  for (const [i, path] of mentions(question ?? "").entries()) {
    attachments += `\n\n${i < MENTION_FILES ? mentionBlock(path, await read(path)) : `[@${path}: not read: at most ${MENTION_FILES} files are inlined in a question]`}`;
  }
  return { instructions, attachments };
}

/** What reading a workspace file found. */
export type Found =
  | { kind: "file"; bytes: Uint8Array }
  | { kind: "missing" }
  | { kind: "folder" }
  /** Outside /workspace by the path rules of "Files" (`..`, absolute, a symlink). */
  | { kind: "outside" }
  /** The sandbox could not read it: why. */
  | { kind: "failed"; why: string };

/**
 * AGENTS.md's bytes, when it is a file: looked for in the workspace's
 * listing first, so that the usual room without one costs no failed read.
 */
async function readAgentsMd(files: ProjectFiles): Promise<Uint8Array | undefined> {
  try {
    const entry = (await files.listFiles(""))?.find((e) => e.name === AGENTS_MD);
    if (entry?.type !== "file" || entry.size === 0) return undefined;
    return (await files.readFile(AGENTS_MD)) ?? undefined;
  } catch (e) {
    if (e instanceof SandboxStarting) throw e;
    if (!(e instanceof BadPath)) console.error(`reading /workspace/${AGENTS_MD} for the agent failed: ${describe(e)}`);
    return undefined;
  }
}

export async function readWorkspaceFile(files: ProjectFiles, path: string): Promise<Found> {
  const parts = pathComponents(path);
  if (typeof parts === "string") return { kind: "outside" };
  const inside = parts.join("/");
  try {
    const bytes = await files.readFile(inside);
    if (bytes !== null) return { kind: "file", bytes };
    // Absent, or a folder: the listing tells which.
    return (await files.listFiles(inside)) !== null ? { kind: "folder" } : { kind: "missing" };
  } catch (e) {
    if (e instanceof BadPath) return { kind: "outside" };
    if (e instanceof SandboxStarting) throw e;
    return { kind: "failed", why: describe(e) };
  }
}

/** Runs `read`, waiting for a starting sandbox (until the turn is cancelled, or two minutes passed). */
async function whenStarted<T>(read: () => Promise<T>, signal: AbortSignal): Promise<T> {
  const deadline = Date.now() + START_WAIT_MS;
  for (;;) {
    try {
      return await read();
    } catch (e) {
      if (!(e instanceof SandboxStarting) || signal.aborted || Date.now() > deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(e.retryAfterSecs, 1), 5) * 1000));
    }
  }
}

/**
 * Where `bytes` stop being UTF-8 (Rust's `Utf8Error`): the valid prefix's
 * length, and whether what follows is only a character the end cut short;
 * undefined when they are UTF-8.
 */
function utf8Error(bytes: Uint8Array): { validUpTo: number; cutShort: boolean } | undefined {
  const cont = (b: number | undefined, lo = 0x80, hi = 0xbf) => b !== undefined && b >= lo && b <= hi;
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    // The allowed range of the second byte (no overlong forms, surrogates or code points past U+10FFFF).
    const [width, lo, hi] =
      b >= 0xc2 && b <= 0xdf ? [2, 0x80, 0xbf]
      : b === 0xe0 ? [3, 0xa0, 0xbf]
      : b === 0xed ? [3, 0x80, 0x9f]
      : b >= 0xe1 && b <= 0xef ? [3, 0x80, 0xbf]
      : b === 0xf0 ? [4, 0x90, 0xbf]
      : b >= 0xf1 && b <= 0xf3 ? [4, 0x80, 0xbf]
      : b === 0xf4 ? [4, 0x80, 0x8f]
      : [0, 0, 0];
    if (width === 0) return { validUpTo: i, cutShort: false };
    for (let k = 1; k < width; k++) {
      if (i + k >= bytes.length) return { validUpTo: i, cutShort: true };
      if (!(k === 1 ? cont(bytes[i + k], lo, hi) : cont(bytes[i + k]))) return { validUpTo: i, cutShort: false };
    }
    i += width;
  }
  return undefined;
}

/**
 * At most `limit` bytes of `bytes` as text, cut back to a whole character,
 * and whether they were cut; undefined when they are not UTF-8 (but for a
 * character the limit cut) (src/ai/context.rs `text_within`).
 */
export function textWithin(bytes: Uint8Array, limit: number): [string, boolean] | undefined {
  const cut = bytes.length > limit;
  let shown = bytes.subarray(0, Math.min(bytes.length, limit));
  for (;;) {
    const error = utf8Error(shown);
    if (error === undefined) return [new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(shown), cut];
    if (!(cut && error.cutShort)) return undefined;
    shown = shown.subarray(0, error.validUpTo);
  }
}

/** The second system message for AGENTS.md's bytes; nothing for an empty file. */
export function agentsNote(bytes: Uint8Array, limit: number): string | undefined {
  if (bytes.length === 0) return undefined;
  const text = textWithin(bytes, limit);
  if (text === undefined) return `${AGENTS_HEADER}\n[${AGENTS_MD} is ${bytes.length} bytes and not text: not shown]`;
  const [shown, cut] = text;
  return `${AGENTS_HEADER}\n${shown}${cut ? `\n[${AGENTS_MD} is ${bytes.length} bytes: only the first ${limit} are shown]` : ""}`;
}

/** What a question is given for the file `@path` names. */
export function mentionBlock(path: string, found: Found): string {
  switch (found.kind) {
    case "missing":
      return `[@${path}: no such file in /workspace]`;
    case "outside":
      return `[@${path}: not a path inside /workspace]`;
    case "folder":
      return `[@${path}: a folder, not a file]`;
    case "failed":
      return `[@${path}: could not be read: ${found.why}]`;
    case "file": {
      const size = found.bytes.length;
      const text = textWithin(found.bytes, MENTION_BYTES);
      if (text === undefined) return `[@${path}: ${size} bytes and not text: not shown]`;
      const [shown, cut] = text;
      return `[@${path}: ${size} bytes]\n${shown}${cut ? `\n[@${path} is ${size} bytes: only the first ${MENTION_BYTES} are shown]` : ""}`;
    }
  }
}

/** What a path written in prose does not end with. */
const TRAILING = /[.,;:!?)\]}'"]+$/u;

/**
 * The paths a question names with `@` (a word that starts with it), each
 * once, in the order first named; not a lone `@`, nor `@agent` as a
 * line's first word (it addresses the agent in room chat).
 */
export function mentions(text: string): string[] {
  const paths: string[] = [];
  for (const line of text.split("\n")) {
    // Rust's split_whitespace: Unicode White_Space.
    const words = line.split(/\p{White_Space}+/u).filter((w) => w !== "");
    for (const [n, word] of words.entries()) {
      if (!word.startsWith("@")) continue;
      const path = word.slice(1).replace(TRAILING, "");
      if (path === "" || (n === 0 && path === "agent") || paths.includes(path)) continue;
      paths.push(path);
    }
  }
  return paths;
}
