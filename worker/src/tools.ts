// The model's `run` tool (docs/protocol.md "Tool calls"): the tool the
// request offers, the streamed calls gathered until the answer ends and
// turned into the `<run>CMD</run>` text a model without tools writes, and
// whether a room still offers the tool to a model (DUET_AI_TOOLS; under
// `auto`, a model whose service refused the tool gets tags from then on).

/** `--ai-tools` (`DUET_AI_TOOLS`): offer the tool, tags if refused; always; never. */
export type ToolsMode = "auto" | "on" | "off";

/** The mode a var names; anything else is the default, `auto`. */
export function toolsMode(value: string | undefined): ToolsMode {
  const v = (value ?? "").trim().toLowerCase();
  return v === "on" || v === "off" ? v : "auto";
}

/** The one tool the request offers, as docs/protocol.md writes it. */
export const RUN_TOOL = {
  type: "function",
  function: {
    name: "run",
    description: "Run a shell command in the room's sandbox, as <run>CMD</run> does; its output comes back to you.",
    parameters: {
      type: "object",
      properties: { cmd: { type: "string", description: "the command line, for bash" } },
      required: ["cmd"],
    },
  },
} as const;

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

  /**
   * The text the calls count as: `<run>CMD</run>` for each call of `run`
   * whose arguments are an object with a string `cmd`, in index order;
   * other calls are left out.
   */
  tags(): string {
    let text = "";
    for (const index of [...this.calls.keys()].sort((a, b) => a - b)) {
      const call = this.calls.get(index);
      const cmd = call?.name === "run" ? runCommand(call.args) : undefined;
      if (cmd !== undefined) text += `<run>${cmd}</run>`;
    }
    return text;
  }
}

/** The `cmd` of a `run` call's arguments, if they are an object with a string `cmd`. */
function runCommand(args: string): string | undefined {
  try {
    const value = JSON.parse(args) as unknown;
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    const cmd = (value as { cmd?: unknown }).cmd;
    return typeof cmd === "string" ? cmd : undefined;
  } catch {
    return undefined;
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
