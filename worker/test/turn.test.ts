// The agent's turn through the Worker, against the fake model and the real
// sandbox: frame order, blocks byte for byte, model errors, the queue,
// cancel and cleanup during a turn (tests/it/neutral/server_turn.rs, agent_e2e.rs).
import { describe, expect, it } from "vitest";
import { chunked, get, joined, label, modelRequests, post, room, script, type Json } from "./support";

/** Posts a message; resolves to its status and answer. */
function ask(r: string, text: string) {
  return post(`/api/rooms/${r}/message`, { text, userId: "ada" });
}

/** Frames until the stored agent (or system) message: the state with `count` messages. */
async function turnFrames(s: Json, count: number): Promise<Json[]> {
  const frames: Json[] = [];
  for (;;) {
    const f = await s.next();
    frames.push(f);
    if (f.type === "cf_agent_state" && f.state.messages.length === count) return frames;
  }
}

const dedup = (labels: string[]) => labels.filter((l, i) => l !== labels[i - 1]);

describe("turn", () => {
  it("streams, runs and stores in protocol order", async () => {
    const r = room("t");
    const key = await script(r, [chunked("Checking.\n<run>echo hi</run>", 4)]);
    const bob = await joined(r, "user=bob");
    const answer = ask(r, `say hi ${key}`);
    const frames = await turnFrames(bob, 2);
    expect(dedup(frames.map(label))).toEqual([
      "state1",
      "ai:start",
      "ai:delta",
      "ai:end",
      "exec:start",
      "exec:stdout",
      "exec:complete",
      "state2",
    ]);
    const start = frames.find((f) => label(f) === "exec:start");
    expect([start.by, start.source]).toEqual(["agent", "agent"]);
    const turnIds = new Set(frames.filter((f) => f.type === "duet_ai").map((f) => f.turnId));
    expect(turnIds.size).toBe(1);
    expect([...turnIds][0]).toMatch(/^t[0-9a-f]{16}$/);
    const streamed = frames.filter((f) => label(f) === "ai:delta").map((f) => f.text).join("");
    expect(streamed).toBe("Checking.\n<run>echo hi</run>");
    const { status, body } = await answer;
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.reply).toBe("Checking.\n\nOutput (echo hi):\nhi");
    expect(Object.keys(body)).toEqual(["reply", "messages"]);
    const agent = body.messages[1];
    expect(agent).toEqual({
      id: "000000000002",
      role: "agent",
      text: body.reply,
      ts: agent.ts,
      runs: [{ cmd: "echo hi", stdout: "hi\n", stderr: "", exitCode: 0, at: 9 }],
      // The scripted model gives no counts: estimated, 28 bytes answered.
      usage: { promptTokens: expect.any(Number), completionTokens: 7, rounds: 1, estimated: true },
    });
    const last = frames[frames.length - 1];
    expect(last.state.messages).toEqual(body.messages);
    expect(last.state.execs[0].source).toBe("agent");
    // What the model was sent.
    const [request] = await modelRequests(r);
    expect(request.headers.authorization).toBe("Bearer sk-test");
    expect(request.body.model).toBe("scripted");
    expect(request.body.stream).toBe(true);
    expect(request.body.messages[0].role).toBe("system");
    expect(request.body.messages[1]).toEqual({ role: "user", content: `ada: say hi ${key}` });
  });

  it("writes the blocks byte for byte", async () => {
    const r = room("t");
    const reply =
      "Let me check.\n<run>printf 'a\\nb\\n'</run>\n<run>echo $(echo \"(x): y\")\necho z</run>\n<run>ls missing-file</run>\n<run>true</run>\n<run>echo oops >&2</run>\nDone.";
    const key = await script(r, [chunked(reply, 7)]);
    const { body } = await ask(r, `go ${key}`);
    expect(body.reply).toBe(
      "Let me check.\n\n\n\n\n\nDone.\n\nOutput (printf 'a\\nb\\n'):\na\nb\n\n\nOutput (echo $(echo \"(x): y\")\necho z):\n(x): y\nz\n\n\nOutput (ls missing-file):\nls: cannot access 'missing-file': No such file or directory\n\n\nOutput (true):\n[no output]\n\nOutput (echo oops >&2):\noops",
    );
    const runs = body.messages[1].runs;
    expect(runs.map((x: Json) => x.cmd)).toEqual([
      "printf 'a\\nb\\n'",
      "echo $(echo \"(x): y\")\necho z",
      "ls missing-file",
      "true",
      "echo oops >&2",
    ]);
    expect(runs[2].exitCode).toBe(2);
    expect(runs[4].stderr).toBe("oops\n");
  });

  it("gathers a fast model's pieces into few deltas, their text whole", async () => {
    const r = room("t");
    const pieces = Array.from({ length: 400 }, (_, i) => `w${i} `);
    const key = await script(r, [{ kind: "stream", pieces }]);
    const bob = await joined(r, "user=bob&deltas=1");
    const { body } = await ask(r, `talk ${key}`);
    expect(body.reply).toBe(pieces.join("").trim());
    const frames: Json[] = [];
    for (;;) {
      const f = await bob.next();
      frames.push(f);
      if (f.type === "duet_message" && f.message.role === "agent") break;
    }
    const deltas = frames.filter((f) => f.type === "duet_ai" && f.phase === "delta");
    expect(deltas.map((f) => f.text).join("")).toBe(pieces.join(""));
    expect(deltas.length).toBeLessThan(pieces.length / 10);
    // A deltas socket gets the stored messages, never a full state.
    expect(frames.filter((f) => f.type === "cf_agent_state")).toEqual([]);
    expect(frames.filter((f) => f.type === "duet_message").map((f) => f.message)).toEqual(body.messages);
  });

  it("reads a service that does not stream", async () => {
    const r = room("t");
    const key = await script(r, [{ kind: "whole", text: "Hello <run>echo hi</run>" }]);
    expect((await ask(r, `hi ${key}`)).body.reply).toBe("Hello\n\nOutput (echo hi):\nhi");
  });

  it("ends the turn with a system message on a model error", async () => {
    const cases: [Json, string][] = [
      [{ kind: "status", status: 401, body: '{"error":{"message":"Incorrect API key provided"}}' }, "answered 401: Incorrect API key provided"],
      [{ kind: "status", status: 429, body: '{"error":{"message":"Rate limit reached"}}' }, "answered 429: Rate limit reached"],
      [{ kind: "status", status: 500, body: "upstream exploded" }, "answered 500: upstream exploded"],
      [{ kind: "broken", pieces: ["I will ", "run <run>touch made</run>"] }, "broke off"],
      [{ kind: "cut", pieces: ["half"] }, "the model's answer broke off: the connection closed before the answer ended"],
      [{ kind: "stream", pieces: ["  "] }, "the model answered with an empty reply"],
    ];
    for (const [s, expected] of cases) {
      const r = room("e");
      const key = await script(r, [s]);
      const bob = await joined(r, "user=bob");
      const { status, body } = await ask(r, `fail ${key}`);
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.reply).toBeNull();
      expect(Object.keys(body)).toEqual(["reply", "error", "messages"]);
      expect(body.error.startsWith("Model error: "), body.error).toBe(true);
      expect(body.error).toContain(expected);
      const last = body.messages[1];
      expect([last.role, last.text, last.userId]).toEqual(["system", body.error, "ada"]);
      const frames = await turnFrames(bob, 2);
      const steps = dedup(frames.map(label));
      expect(steps[0]).toBe("state1");
      expect(steps).toContain("ai:error");
      expect(steps.some((x) => x.startsWith("exec"))).toBe(false);
      expect(frames.find((f) => label(f) === "ai:error").error).toBe(body.error);
    }
  });

  it("stores messages sent during a turn at once and answers them in order", async () => {
    const r = room("q");
    const key1 = await script(`${r}-1`, [{ kind: "paced", pieces: ["first"], ms: 300 }]);
    const key2 = await script(`${r}-2`, [{ kind: "paced", pieces: ["second"], ms: 300 }]);
    const bob = await joined(r, "user=bob");
    const one = ask(r, `one ${key1}`);
    await bob.until((f) => f.type === "duet_ai" && f.phase === "start");
    const two = ask(r, `two ${key2}`);
    const state = await bob.untilType("cf_agent_state");
    expect(state.state.messages.map((m: Json) => m.text)).toEqual([`one ${key1}`, `two ${key2}`]);
    expect((await one).body.reply).toBe("first");
    const second = (await two).body;
    expect(second.reply).toBe("second");
    expect(second.messages.map((m: Json) => m.text)).toEqual([`one ${key1}`, `two ${key2}`, "first", "second"]);
    // The second turn saw the first reply and its own message last.
    const history = (await modelRequests(`${r}-2`))[0].body.messages;
    expect(history[history.length - 1].content).toBe(`ada: two ${key2}`);
    expect(history.some((m: Json) => m.role === "assistant" && m.content === "first")).toBe(true);
  });

  it("cancels a hanging turn, keeping what it had said, and records who did", async () => {
    const r = room("c");
    const key = await script(r, [{ kind: "hang", pieces: ["thinking"] }]);
    const bob = await joined(r, "user=bob");
    const answer = ask(r, `hang ${key}`);
    const start = await bob.until((f) => f.type === "duet_ai" && f.phase === "start");
    await bob.until((f) => f.type === "duet_ai" && f.phase === "delta");
    expect((await post(`/api/rooms/${r}/cancel`, { turnId: "t-other" })).body).toEqual({ cancelled: false });
    expect((await post(`/api/rooms/${r}/cancel`, { turnId: start.turnId, userId: "bob" })).body).toEqual({ cancelled: true });
    const { status, body } = await answer;
    expect(status).toBe(200);
    expect(body.reply).toBeNull();
    expect(body.error).toBe("the agent's turn was cancelled");
    const [question, reply, record] = body.messages;
    expect(question.role).toBe("user");
    expect(reply).toEqual({
      id: "000000000002",
      role: "agent",
      text: "thinking",
      ts: reply.ts,
      cancelledBy: "bob",
      usage: { promptTokens: expect.any(Number), completionTokens: 2, rounds: 1, estimated: true },
    });
    expect(record).toEqual({
      id: "000000000003",
      role: "system",
      userId: "bob",
      text: "bob cancelled the agent's turn",
      ts: record.ts,
      event: { kind: "cancel", by: "bob", turnId: start.turnId },
    });
    const error = await bob.until((f) => f.type === "duet_ai" && f.phase === "error");
    expect(error.error).toBe("the agent's turn was cancelled");
    expect((await post(`/api/rooms/${r}/cancel`, {})).body).toEqual({ cancelled: false });
  });

  it("kills the agent's running command on cancel", async () => {
    const r = room("c");
    const key = await script(r, [chunked("<run>sleep 60</run>", 50)]);
    const bob = await joined(r, "user=bob");
    const answer = ask(r, `sleep ${key}`);
    await bob.until((f) => f.type === "duet_exec" && f.phase === "start");
    // The command may not have reached the shell yet: the cancel interrupts it when it does.
    expect((await post(`/api/rooms/${r}/cancel`, {})).body).toEqual({ cancelled: true });
    const { body } = await answer;
    expect(body.reply).toBeNull();
    expect(body.error).toBe("the agent's turn was cancelled");
    const complete = await bob.until((f) => f.type === "duet_exec" && f.phase === "complete");
    expect([complete.exitCode, complete.interrupted], JSON.stringify(complete)).toEqual([130, true]);
  });

  it("answers a turn cut by cleanup and keeps the room empty", async () => {
    const r = room("c");
    const key = await script(r, [{ kind: "hang", pieces: ["…"] }]);
    const bob = await joined(r, "user=bob");
    const answer = ask(r, `hang ${key}`);
    await bob.until((f) => f.type === "duet_ai" && f.phase === "start");
    expect((await post(`/api/rooms/${r}/cleanup`, { userId: "bob" })).status).toBe(200);
    const { body } = await answer;
    expect(body.reply).toBeNull();
    expect(body.error).toBe("the room was cleaned up");
    expect((await post(`/api/rooms/${r}/cancel`, {})).body).toEqual({ cancelled: false });
    // Nothing of the turn is kept, only who cleaned up.
    const left = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(left.map((m: Json) => [m.role, m.event])).toEqual([["system", { kind: "cleanup", by: "bob" }]]);
  });
});
