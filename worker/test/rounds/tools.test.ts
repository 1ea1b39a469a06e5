// A `run` call in one round, under DUET_AGENT_STEPS=5: the next round gives
// the model its reply with the tag and the command's result as text, as
// for tags, and offers the tool again (docs/protocol.md "Tool calls").
import { describe, expect, it } from "vitest";
import { chunked, modelRequests, room, script } from "../support";
import { TOOLS, ask, pieces } from "../tools";

describe("the run tool across rounds", () => {
  it("shows the next round the call as its tag and the output as text", async () => {
    const r = room("tr");
    const key = await script(r, [
      { kind: "tools", pieces: ["Checking."], calls: [{ name: "run", args: pieces('{"cmd":"echo first"}', 5) }] },
      chunked("It printed first.", 4),
    ]);
    const body = await ask(r, `go ${key}`);
    expect(body.reply).toBe("Checking.\n\nOutput (echo first):\nfirst\n\nIt printed first.");
    const requests = await modelRequests(r);
    expect(requests.length).toBe(2);
    const second = requests[1].body.messages;
    expect(second[second.length - 2]).toEqual({ role: "assistant", content: "Checking.<run>echo first</run>" });
    expect(second[second.length - 1].content).toContain("Output (echo first) [exit code 0]:\nfirst");
    expect(requests.map((q) => q.body.tools)).toEqual([TOOLS, TOOLS]);
  });
});
