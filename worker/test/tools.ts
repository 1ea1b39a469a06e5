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
