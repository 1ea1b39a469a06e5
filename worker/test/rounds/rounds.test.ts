// DUET_AGENT_STEPS=5: after a round that ran commands the model is asked
// again with their outputs; the stored reply holds every round
// (tests/it/direct/agent_turn.rs, rounds); a model that fails after a round
// keeps what it did. DUET_AI_TIMEOUT_SECS=2 here.
import { describe, expect, it } from "vitest";
import { chunked, joined, modelRequests, post, room, script, type Json } from "../support";

describe("rounds", () => {
  it("give outputs back and end in one reply", async () => {
    const r = room("rounds");
    const key = await script(r, [
      chunked("<run>echo one</run>", 3),
      chunked("Now two.\n<run>echo two; exit 3</run>", 3),
      chunked("Done.", 3),
    ]);
    const bob = await joined(r, "user=bob");
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: `go ${key}`, userId: "ada" });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.reply).toBe("Output (echo one):\none\n\nNow two.\n\nOutput (echo two; exit 3):\ntwo\n\nDone.");
    // `exit 3` ended the shell: its record follows the reply, in the order things happened.
    expect(body.messages[2].event).toMatchObject({ kind: "shell", by: "agent", reason: "exit", reset: true });
    const stored = body.messages[1];
    expect(stored.runs.length).toBe(2);
    expect(stored.runs[1].exitCode).toBe(3);
    const requests = await modelRequests(r);
    expect(requests.length).toBe(3);
    const second = requests[1].body.messages;
    expect(second[second.length - 2]).toEqual({ role: "assistant", content: "<run>echo one</run>" });
    expect(second[second.length - 1].role).toBe("user");
    expect(second[second.length - 1].content).toContain("Output (echo one) [exit code 0]:\none");
    expect(JSON.stringify(requests[2].body.messages)).toContain("[exit code 3]");
    // Every client sees the rounds' text apart, each round in its own start…end.
    const frames: Json[] = [];
    for (;;) {
      const f = await bob.next();
      frames.push(f);
      if (f.type === "cf_agent_state" && f.state.messages.length === 3) break;
    }
    const ai = frames.filter((f) => f.type === "duet_ai");
    expect(ai.filter((f) => f.phase === "delta").map((f) => f.text).join("")).toBe(
      "<run>echo one</run>\n\nNow two.\n<run>echo two; exit 3</run>\n\nDone.",
    );
    expect(ai.filter((f) => f.phase !== "delta").map((f) => f.phase)).toEqual(["start", "end", "start", "end", "start", "end"]);
    expect(new Set(ai.map((f) => f.turnId)).size).toBe(1);
  });

  it("keep what the ended rounds did when a later model call fails", async () => {
    const r = room("fail2");
    const key = await script(r, [chunked("Checking.<run>echo one</run>", 4), { kind: "status", status: 500, body: "upstream exploded" }]);
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: `go ${key}`, userId: "ada" });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.reply).toBeNull();
    expect(body.error).toMatch(/^Model error: .*answered 500: upstream exploded/);
    const [, agent, system] = body.messages;
    expect(agent).toMatchObject({
      role: "agent",
      text: "Checking.\n\nOutput (echo one):\none\n\nThe agent stopped after 1 round: the model failed; ask it to go on.",
      usage: { rounds: 1 },
    });
    expect(agent.runs.map((run: Json) => run.stdout)).toEqual(["one\n"]);
    expect(agent.cancelledBy).toBeUndefined();
    expect(system).toMatchObject({ role: "system", userId: "ada", text: body.error });
    expect(body.messages.length).toBe(3);
  });

  it("end a model slower than the timeout", async () => {
    const r = room("slow");
    const key = await script(r, [{ kind: "hang", pieces: ["Hmm"] }]);
    const { body } = await post(`/api/rooms/${r}/message`, { text: `slow ${key}` });
    expect(body.reply).toBeNull();
    expect(body.error).toBe("Model error: the model did not finish within 2 seconds");
  });
});
