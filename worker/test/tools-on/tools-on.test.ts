// DUET_AI_TOOLS=on: the tool is always offered, a call runs as its tag,
// and a service that refuses tools is the turn's model error
// (docs/protocol.md "Tool calls").
import { describe, expect, it } from "vitest";
import { inject } from "vitest";
import { modelRequests, room, script } from "../support";
import { TOOLS, ask, pieces } from "../tools";

describe("--ai-tools on", () => {
  it("runs a streamed call", async () => {
    const r = room("on");
    const key = await script(r, [{ kind: "tools", calls: [{ name: "run", args: pieces('{"cmd": "echo on"}', 3) }] }]);
    const body = await ask(r, `go ${key}`);
    expect(body.reply).toBe("Output (echo on):\non");
    const [request] = await modelRequests(r);
    expect(request.body.tools).toEqual(TOOLS);
  });

  it("makes a refusal of the tool the turn's model error, and offers it again next turn", async () => {
    const r = room("on");
    const key = await script(r, [{ kind: "notools", then: { kind: "stream", pieces: ["never"] } }]);
    const url = `${inject("modelUrl")}/v1/chat/completions`;
    const error = `Model error: the model's service at ${url} answered 400: tools are not supported by this model`;
    const first = await ask(r, `try ${key}`);
    expect([first.reply, first.error]).toEqual([null, error]);
    expect(first.messages[1]).toMatchObject({ role: "system", text: error });
    const second = await ask(r, `again ${key}`);
    expect(second.error).toBe(error);
    // Each turn offers the tool; its refusal is asked once more without
    // `stream_options` (a 4xx may be about that: docs/protocol.md "Usage").
    const requests = await modelRequests(r);
    expect(requests.map((q) => q.body.tools !== undefined)).toEqual([true, true, true, true]);
    expect(requests.map((q) => q.body.stream_options !== undefined)).toEqual([true, false, true, false]);
  });
});
