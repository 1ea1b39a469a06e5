// The file tools (docs/protocol.md "Tool calls"): `read_file`,
// `write_file` and `edit_file`, confined to /workspace by the path rules
// of "Files"; what a call asks for, what it does through the turn's host
// (a write or an edit asks the room's policy first and is noted in the
// timeline), what the model is told and the line the reply gets. The texts
// are src/ai/tools.rs's.

import { readWorkspaceFile, textWithin, type Found, type ProjectFiles } from "./context";
import type { RoomEvent } from "./protocol";
import type { ToolCall } from "./tools";

/** Bytes of a file `read_file` gives the model. */
export const READ_BYTES = 32 * 1024;

export type FileCall =
  | { kind: "read"; path: string }
  | { kind: "write"; path: string; content: string }
  | { kind: "edit"; path: string; old: string; new: string }
  /** A call that cannot be done as asked: its label and why. */
  | { kind: "bad"; label: string; why: string };

/** What one call of a round asks for. */
export type Action = { kind: "run"; cmd: string } | { kind: "file"; call: FileCall };

/** The action of a call; a `run` whose arguments are not an object with a string `cmd` is left out. */
export function action(call: ToolCall): Action | undefined {
  let args: unknown = null;
  try {
    args = JSON.parse(call.args);
  } catch {
    args = null;
  }
  const field = (name: string): string | undefined => {
    if (args === null || typeof args !== "object" || Array.isArray(args)) return undefined;
    const v = (args as Record<string, unknown>)[name];
    return typeof v === "string" ? v : undefined;
  };
  const needs = (fields: string): Action => ({ kind: "file", call: { kind: "bad", label: call.name, why: `${call.name} needs ${fields}` } });
  switch (call.name) {
    case "run": {
      const cmd = field("cmd");
      return cmd === undefined ? undefined : { kind: "run", cmd };
    }
    case "read_file": {
      const path = field("path");
      return path === undefined ? needs("a string `path`") : { kind: "file", call: { kind: "read", path } };
    }
    case "write_file": {
      const [path, content] = [field("path"), field("content")];
      return path === undefined || content === undefined ? needs("the strings `path` and `content`") : { kind: "file", call: { kind: "write", path, content } };
    }
    case "edit_file": {
      const [path, old, replacement] = [field("path"), field("old"), field("new")];
      if (path === undefined || old === undefined || replacement === undefined) return needs("the strings `path`, `old` and `new`");
      return { kind: "file", call: { kind: "edit", path, old, new: replacement } };
    }
    default:
      return {
        kind: "file",
        call: { kind: "bad", label: call.name, why: `there is no tool ${JSON.stringify(call.name)}: use run, read_file, write_file or edit_file` },
      };
  }
}

/** What a file call did. */
export interface FileOutcome {
  /** `edit_file src/a.py`: how the model's results name it. */
  label: string;
  failed: boolean;
  /** What the model is told. */
  result: string;
  /** The line the reply gets (a write or edit, done or refused). */
  line?: string;
}

/** What a file call needs of the room. */
export interface FileHost {
  files(): ProjectFiles;
  /** The room's policy: why not, or undefined once it may. */
  ask(what: string): Promise<string | undefined>;
  /** Writes the file (the turn's checkpoint first): why it could not, or undefined. */
  write(path: string, bytes: Uint8Array): Promise<string | undefined>;
  /** Notes the edit in the room's timeline. */
  edited(event: RoomEvent): void;
}

/** Lines added and removed from `old` to `text`: those between their common first and last lines. */
export function changedLines(old: string, text: string): [number, number] {
  const lines = (s: string) => s.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const a = lines(old);
  const b = lines(text);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return [b.length - head - tail, a.length - head - tail];
}

/** Why a read found no file. */
function readProblem(path: string, found: Found): string {
  switch (found.kind) {
    case "missing":
      return `no such file in /workspace: ${path}`;
    case "outside":
      return `${path} is not a path inside /workspace (paths are relative, without \`..\`, and no symlinks)`;
    case "folder":
      return `${path} is a folder, not a file`;
    case "failed":
      return `${path} could not be read: ${found.why}`;
    case "file":
      return `${path} could not be read`;
  }
}

/** A file's text for a write or an edit: null when absent; a string error otherwise. */
async function current(host: FileHost, path: string): Promise<{ text: string | null } | { why: string }> {
  const found = await readWorkspaceFile(host.files(), path);
  if (found.kind === "missing") return { text: null };
  if (found.kind !== "file") return { why: readProblem(path, found) };
  const text = textWithin(found.bytes, found.bytes.length);
  return text === undefined ? { why: `${path} is not UTF-8 text` } : { text: text[0] };
}

/** The new text of an edit of `text`, or why there is none. */
export function replaced(path: string, text: string, old: string, replacement: string): { text: string } | { why: string } {
  if (old === "") return { why: "`old` is empty: give the exact text to replace" };
  const n = text.split(old).length - 1;
  if (n === 0) return { why: `\`old\` does not occur in ${path}: read the file and copy the text exactly` };
  if (n > 1) return { why: `\`old\` occurs ${n} times in ${path}: give more of the text around it so that it occurs once` };
  const at = text.indexOf(old);
  return { text: text.slice(0, at) + replacement + text.slice(at + old.length) };
}

const error = (label: string, why: string): FileOutcome => ({ label, failed: true, result: why });

/** Does a file call of turn `turnId` through `host`. */
export async function runFileCall(host: FileHost, call: FileCall, turnId: string): Promise<FileOutcome> {
  switch (call.kind) {
    case "bad":
      return error(call.label, call.why);
    case "read": {
      const label = `read_file ${call.path}`;
      const found = await readWorkspaceFile(host.files(), call.path);
      return found.kind === "file" ? { label, failed: false, result: readText(found.bytes) } : error(label, readProblem(call.path, found));
    }
    case "write": {
      const label = `write_file ${call.path}`;
      const now = await current(host, call.path);
      let old = "";
      if ("why" in now) {
        // A file that is not text is replaced whole all the same.
        if (!now.why.endsWith("is not UTF-8 text")) return error(label, now.why);
      } else old = now.text ?? "";
      const refused = await host.ask(label);
      if (refused !== undefined) return refusedOutcome(label, "write", call.path, refused);
      return store(host, label, "Wrote", call.path, old, call.content, turnId);
    }
    case "edit": {
      const label = `edit_file ${call.path}`;
      const before = await current(host, call.path);
      if ("why" in before) return error(label, before.why);
      if (before.text === null) return error(label, readProblem(call.path, { kind: "missing" }));
      const first = replaced(call.path, before.text, call.old, call.new);
      if ("why" in first) return error(label, first.why);
      const refused = await host.ask(label);
      if (refused !== undefined) return refusedOutcome(label, "edit", call.path, refused);
      // Read again: the file may have changed while a person decided.
      const after = await current(host, call.path);
      if ("why" in after) return error(label, after.why);
      if (after.text === null) return error(label, readProblem(call.path, { kind: "missing" }));
      const edit = replaced(call.path, after.text, call.old, call.new);
      if ("why" in edit) return error(label, edit.why);
      return store(host, label, "Edited", call.path, after.text, edit.text, turnId);
    }
  }
}

/** Writes the file and says what changed. */
async function store(host: FileHost, label: string, verb: string, path: string, old: string, content: string, turnId: string): Promise<FileOutcome> {
  const [added, removed] = changedLines(old, content);
  const bytes = new TextEncoder().encode(content);
  const why = await host.write(path, bytes);
  if (why !== undefined) return error(label, why);
  host.edited({ kind: "edit", by: "agent", turnId, path, added, removed });
  const change = `+${added} -${removed} lines`;
  return { label, failed: false, result: `${verb.toLowerCase()} ${path} (${bytes.length} bytes): ${change}`, line: `${verb} ${path} (${change})` };
}

/** A write or edit the room's policy refused. */
function refusedOutcome(label: string, what: string, path: string, why: string): FileOutcome {
  return { label, failed: true, result: why, line: `Did not ${what} ${path}: ${why}` };
}

/** A file's bytes as the model reads them. */
function readText(bytes: Uint8Array): string {
  const text = textWithin(bytes, READ_BYTES);
  if (text === undefined) return `[${bytes.length} bytes and not text: not shown]`;
  const [shown, cut] = text;
  return cut ? `${shown}\n[the file is ${bytes.length} bytes: only the first ${new TextEncoder().encode(shown).length} are shown]` : shown;
}
