// The model's `run` tool under DUET_AI_TOOLS=auto (the default): offered in
// the request; a streamed call (its arguments in pieces) gives the same
// stored reply, runs and frames as the same command in tags; a service that
// refuses tools is asked again without them, and gets tags from then on
// (docs/protocol.md "Tool calls").
import { describe, expect, it } from "vitest";
import { chunked, joined, label, modelRequests, room, script, type Json, type Ws } from "./support";
import { TOOLS, ask, pieces } from "./tools";

/** The frames of a turn, up to its stored agent message, as labels, and its streamed text. */
async function turn(s: Ws): Promise<{ labels: string[]; streamed: string }> {
  const frames: Json[] = [];
  for (;;) {
    const f = await s.next();
    frames.push(f);
    if (f.type === "duet_message" && f.message.role === "agent") break;
  }
  const labels = frames.map((f) => (f.type === "duet_message" ? `message:${f.message.role}` : label(f)));
  return {
    labels: labels.filter((l, i) => l !== labels[i - 1]),
    streamed: frames.filter((f) => f.type === "duet_ai" && f.phase === "delta").map((f) => f.text).join(""),
  };
}

/** What a turn stored, without ids and times. */
function stored(body: Json): Json {
  const agent = body.messages[body.messages.length - 1];
  return { reply: body.reply, text: agent.text, runs: agent.runs, role: agent.role };
}

describe("the run tool", () => {
  it("is offered, and a streamed call counts as the tag: same reply, runs and frames", async () => {
    const withTags = room("tags");
    const withTool = room("tool");
    const cmd = "printf 'a b\\n' && echo \"quoted\"";
    const tagKey = await script(withTags, [chunked(`Let me look.<run>${cmd}</run>`, 5)]);
    const args = JSON.stringify({ cmd });
    const toolKey = await script(withTool, [{ kind: "tools", pieces: ["Let me ", "look."], calls: [{ name: "run", args: pieces(args, 4) }] }]);
    const a = await joined(withTags, "user=bob&deltas=1");
    const b = await joined(withTool, "user=bob&deltas=1");
    const tags = await ask(withTags, `look ${tagKey}`);
    const tool = await ask(withTool, `look ${toolKey}`);
    expect(stored(tool)).toEqual(stored(tags));
    expect(tool.reply).toBe("Let me look.\n\nOutput (printf 'a b\\n' && echo \"quoted\"):\na b\nquoted");
    expect(tool.messages[1].runs).toEqual([{ cmd, stdout: "a b\nquoted\n", stderr: "", exitCode: 0, at: 12 }]);
    const [tagFrames, toolFrames] = [await turn(a), await turn(b)];
    expect(toolFrames.streamed).toBe(`Let me look.<run>${cmd}</run>`);
    expect(toolFrames).toEqual(tagFrames);
    const [request] = await modelRequests(withTool);
    expect([request.body.tools, request.body.tool_choice]).toEqual([TOOLS, "auto"]);
    a.close();
    b.close();
  });

  it("runs only calls of run whose arguments hold a string cmd, in order", async () => {
    const r = room("tool");
    const key = await script(r, [
      {
        kind: "tools",
        calls: [
          { name: "run", args: ['{"cmd":"echo one"}'] },
          { name: "search", args: ['{"cmd":"echo other-tool"}'] },
          { name: "run", args: ['{"command":"echo wrong-field"}'] },
          { name: "run", args: ['{"cmd":5}'] },
          { name: "run", args: ["not json"] },
          { name: "run", args: ['["echo array"]'] },
          { name: "run", args: ['{"cmd":', '"echo two"}'] },
        ],
      },
    ]);
    const body = await ask(r, `go ${key}`);
    expect(body.messages[1].runs.map((x: Json) => x.cmd)).toEqual(["echo one", "echo two"]);
    expect(body.reply).toBe("Output (echo one):\none\n\n\nOutput (echo two):\ntwo");
  });

  it("falls back to tags when the service refuses tools, and keeps to tags with that model", async () => {
    const r = room("refuse");
    const key = await script(r, [
      { kind: "notools", then: chunked("Sure.<run>echo fallback</run>", 6) },
      { kind: "notools", then: chunked("Again.", 3) },
    ]);
    const first = await ask(r, `try ${key}`);
    expect(first.reply).toBe("Sure.\n\nOutput (echo fallback):\nfallback");
    expect(first.error).toBeUndefined();
    const second = await ask(r, `more ${key}`);
    expect(second.reply).toBe("Again.");
    const requests = await modelRequests(r);
    expect(requests.map((q) => q.body.tools !== undefined)).toEqual([true, false, false]);
    // The request asked again is the same, but for the tool.
    const { tools: _, tool_choice: __, ...refused } = requests[0].body;
    expect(requests[1].body).toEqual(refused);
    // No record of the refusal in the room.
    expect(second.messages.filter((m: Json) => m.role === "system")).toEqual([]);
  });
});
