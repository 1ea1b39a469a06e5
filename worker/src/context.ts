// What the agent knows of the project (docs/protocol.md "What the agent
// knows of the project"): /workspace/AGENTS.md, read afresh each turn and
// sent as the second `system` message, and the workspace files a question
// names with `@path`, inlined into the question as the model sees it; both
// read through the sandbox seam, with the texts duet serve sends
// (src/ai/context.rs).

import { describe } from "./http";
import { capText } from "./protocol";
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
  | { kind: "outside" };

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

async function readWorkspaceFile(files: ProjectFiles, path: string): Promise<Found> {
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
    // The turn goes on without it; the room's people see the model's answer.
    console.error(`reading /workspace/${inside} for the agent failed: ${describe(e)}`);
    return { kind: "missing" };
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

/** The bytes as text, if they are UTF-8. */
function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The second system message for AGENTS.md's bytes; nothing for an empty file. */
export function agentsNote(bytes: Uint8Array, limit: number): string | undefined {
  if (bytes.length === 0) return undefined;
  const text = utf8(bytes);
  if (text === undefined) return `${AGENTS_HEADER}\n[${AGENTS_MD} is ${bytes.length} bytes and not text: not shown]`;
  const [shown, cut] = capText(text, limit);
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
    case "file": {
      const size = found.bytes.length;
      const text = utf8(found.bytes);
      if (text === undefined) return `[@${path}: ${size} bytes and not text: not shown]`;
      const [shown, cut] = capText(text, MENTION_BYTES);
      return `[@${path}: ${size} bytes]\n${shown}${cut ? `\n[@${path} is ${size} bytes: only the first ${MENTION_BYTES} are shown]` : ""}`;
    }
  }
}

/** A `@` that starts a word (at the start of the text or after white space), and the word after it. */
const MENTION = /(?<=^|\p{White_Space})@(\P{White_Space}*)/gu;
/** What a path written in prose does not end with. */
const TRAILING = /[.,;:!?)\]}'"]+$/u;

/**
 * The paths a question names with `@`, each once, in the order first
 * named; not a lone `@`, nor `@agent` at the start of a line (it
 * addresses the agent in room chat).
 */
export function mentions(text: string): string[] {
  const paths: string[] = [];
  for (const m of text.matchAll(MENTION)) {
    const path = m[1].replace(TRAILING, "");
    const lineStart = m.index === 0 || text[m.index - 1] === "\n";
    if (path === "" || (path === "agent" && lineStart) || paths.includes(path)) continue;
    paths.push(path);
  }
  return paths;
}
