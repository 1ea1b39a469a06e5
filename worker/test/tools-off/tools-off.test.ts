// DUET_AI_TOOLS=off (the tool is never offered; tags work) and
// DUET_AGENTS_MD_BYTES=64 (AGENTS.md is cut there).
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ORIGIN, TOKEN, chunked, modelRequests, room, script } from "../support";
import { ask } from "../tools";

describe("--ai-tools off, --agents-md-bytes 64", () => {
  it("offers no tool, runs tags, and cuts AGENTS.md at 64 bytes", async () => {
    const r = room("off");
    const text = "x".repeat(100);
    const res = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/files/AGENTS.md`, { method: "PUT", headers: { authorization: `Bearer ${TOKEN}` }, body: text });
    expect(res.status).toBe(200);
    const key = await script(r, [chunked("Tags.<run>echo off</run>", 4)]);
    const body = await ask(r, `go ${key}`);
    expect(body.reply).toBe("Tags.\n\nOutput (echo off):\noff");
    const [request] = await modelRequests(r);
    expect(["tools" in request.body, "tool_choice" in request.body]).toEqual([false, false]);
    expect(request.body.messages[1]).toEqual({
      role: "system",
      content: `[the project's instructions: /workspace/AGENTS.md]\n${"x".repeat(64)}\n[AGENTS.md is 100 bytes: only the first 64 are shown]`,
    });
  });
});
