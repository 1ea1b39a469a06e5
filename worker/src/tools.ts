// The model's tools (docs/protocol.md "Tool calls"): those the request
// offers (`run` and the file tools of filetools.ts), the streamed calls
// gathered until the answer ends, and whether a room still offers tools to
// a model (DUET_AI_TOOLS; under `auto`, a model whose service refused them
// gets `<run>` tags from then on).

/** `--ai-tools` (`DUET_AI_TOOLS`): offer the tool, tags if refused; always; never. */
export type ToolsMode = "auto" | "on" | "off";

/** The mode a var names; anything else is the default, `auto`. */
export function toolsMode(value: string | undefined): ToolsMode {
  const v = (value ?? "").trim().toLowerCase();
  return v === "on" || v === "off" ? v : "auto";
}

const string = (description: string) => ({ type: "string", description });
const tool = (name: string, description: string, properties: Record<string, unknown>, required: string[]) => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties, required } },
});

/** The tools the request offers, as docs/protocol.md writes them (src/ai/tools.rs). */
export const TOOLS = [
  tool(
    "run",
    "Run a shell command in the room's sandbox, as <run>CMD</run> does; its output comes back to you.",
    { cmd: string("the command line, for bash") },
    ["cmd"],
  ),
  tool("read_file", "Read a file of the workspace (a path relative to /workspace).", { path: string("the file, relative to /workspace") }, ["path"]),
  tool(
    "write_file",
    "Write a whole file of the workspace, creating it (and its folders) or replacing it.",
    { path: string("the file, relative to /workspace"), content: string("its new text") },
    ["path", "content"],
  ),
  tool(
    "edit_file",
    "Replace the one place in a file of the workspace where `old` occurs (exactly, once) with `new`.",
    {
      path: string("the file, relative to /workspace"),
      old: string("the exact text to replace: it must occur once in the file"),
      new: string("the text to put in its place"),
    },
    ["path", "old", "new"],
  ),
];

/** A tool the model called: its name and its arguments' JSON text. */
export interface ToolCall {
  name: string;
  args: string;
}

/** One piece of a streamed tool call (OpenAI's `delta.tool_calls[i]`). */
export interface ToolCallPiece {
  /** Its place among the answer's calls (where a service leaves it out: its place in the chunk's list). */
  index: number;
  name?: string;
  /** A piece of the arguments' JSON text. */
  args?: string;
}

/** The pieces of an answer's tool calls, gathered by `index` until the answer ends. */
export class ToolCalls {
  private readonly calls = new Map<number, { name: string; args: string }>();

  add(piece: ToolCallPiece): void {
    const call = this.calls.get(piece.index) ?? { name: "", args: "" };
    if (piece.name !== undefined) call.name = piece.name;
    if (piece.args !== undefined) call.args += piece.args;
    this.calls.set(piece.index, call);
  }

  /** The calls with a name, in index order. */
  list(): ToolCall[] {
    const out: ToolCall[] = [];
    for (const index of [...this.calls.keys()].sort((a, b) => a - b)) {
      const call = this.calls.get(index);
      if (call && call.name !== "") out.push({ name: call.name, args: call.args });
    }
    return out;
  }
}

/**
 * Whether a room offers the tool to a model: never under `off`, always
 * under `on`; under `auto` until that model's service refused it once
 * (kept for the life of the room's object).
 */
export class ToolOffer {
  private readonly refusedBy = new Set<string>();

  constructor(readonly mode: ToolsMode) {}

  offers(base: string, model: string): boolean {
    return this.mode === "on" || (this.mode === "auto" && !this.refusedBy.has(key(base, model)));
  }

  /** Whether a refusal (an HTTP 4xx) is answered by asking again without the tool. */
  fallsBack(): boolean {
    return this.mode === "auto";
  }

  /** The model's service refused the tool: tags from now on. */
  refused(base: string, model: string): void {
    this.refusedBy.add(key(base, model));
  }
}

function key(base: string, model: string): string {
  return `${base.replace(/\/+$/, "")} ${model}`;
}
