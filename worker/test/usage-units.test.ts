// What a turn cost and the models a room may choose, with the cases of
// src/ai/usage.rs, src/ai/sse.rs and src/ai/agent.rs.
import { describe, expect, it } from "vitest";
import { chunkEvents } from "../src/model";
import { addRound, agentState, estimate, notAllowed, parseModels, roomModel } from "../src/usage";

describe("usage", () => {
  it("comes from the last chunk, or one with choices", () => {
    expect(chunkEvents({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } })).toEqual([
      { kind: "usage", prompt: 12, completion: 3 },
    ]);
    expect(chunkEvents({ choices: [{ delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1 } })).toEqual([
      { kind: "finished" },
      { kind: "usage", prompt: 5, completion: 1 },
    ]);
    expect(chunkEvents({ choices: [], usage: null })).toEqual([]);
    expect(chunkEvents({ choices: [], usage: { prompt_tokens: "5", completion_tokens: 1 } })).toEqual([]);
  });

  it("sums reported rounds, and one estimated round marks the sum", () => {
    const one = addRound(undefined, { tokens: { prompt: 100, completion: 7 } }, 9_999, "ignored");
    expect(one).toEqual({ promptTokens: 100, completionTokens: 7, rounds: 1 });
    expect(addRound(one, {}, 401, "12345")).toEqual({ promptTokens: 201, completionTokens: 9, rounds: 2, estimated: true });
    expect(estimate(0)).toBe(0);
    expect(estimate(4)).toBe(1);
    expect(estimate(5)).toBe(2);
  });

  it("lists the models, the first the default, and keeps a choice only while allowed", () => {
    expect(parseModels(" a, b ,,a,c ")).toEqual(["a", "b", "c"]);
    const settings = { model: "scripted", models: ["a", "b"], steps: 10, turnMs: 600_000, contextTokens: 32_000 };
    expect(roomModel(settings, undefined)).toBe("a");
    expect(roomModel(settings, "b")).toBe("b");
    expect(roomModel(settings, "gone")).toBe("a");
    expect(agentState({ ...settings, models: [] }, undefined)).toEqual({ model: "scripted", models: ["scripted"], steps: 10, turnSecs: 600, contextTokens: 32_000 });
    expect(agentState({ models: [], steps: 3, turnMs: 1000, contextTokens: 100 }, "x").model).toBeNull();
    expect(notAllowed(["a", "b"])).toBe("must be one of a, b");
  });
});
