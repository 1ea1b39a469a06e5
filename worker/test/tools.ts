// The contract's `run` tool (docs/protocol.md "Tool calls"), as the tests
// expect the request to offer it, and how they ask the agent.
import { expect } from "vitest";
import { post, type Json } from "./support";

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
};

const string = (description: string) => ({ type: "string", description });
const tool = (name: string, description: string, properties: Record<string, unknown>, required: string[]) => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties, required } },
});

/** The tools every request offers (docs/protocol.md "Tool calls"). */
export const TOOLS = [
  RUN_TOOL,
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

/** Asks the agent in room `r`; its answer. */
export async function ask(r: string, text: string): Promise<Json> {
  const { status, body } = await post(`/api/rooms/${r}/message`, { text, userId: "ada" });
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}

/** `args` cut into pieces of `size` characters, as a service streams a call's arguments. */
export function pieces(args: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += size) out.push(args.slice(i, i + size));
  return out;
}
