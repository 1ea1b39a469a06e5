// The agent's loop in units, as src/ai/fit.rs and src/ai/tools.rs test
// theirs: what fits the context, an output's head and tail, the lines an
// edit changed, an edit's one exact match, and what a tool call asks for.
import { describe, expect, it } from "vitest";
import { action, changedLines, replaced } from "../src/filetools";
import { fitted, headAndTail, tokens } from "../src/fit";
import type { ChatMessage } from "../src/model";

const user = (content: string): ChatMessage => ({ role: "user", content });

describe("the context", () => {
  it("leaves the oldest history out beyond the budget, with a note", () => {
    const history = Array.from({ length: 100 }, (_, i) => user(`${String(i).padStart(4, "0")}${"x".repeat(396)}`));
    const c = { head: [{ role: "system" as const, content: "s" }], history, question: [user("the question")], rounds: [] };
    const sent = fitted(c, 1000);
    const cost = sent.reduce((n, m) => n + tokens(m.content) + 4, 0);
    expect(cost).toBeLessThanOrEqual(1000);
    expect(sent[0].content).toBe("s");
    expect(sent[1].content.startsWith("[left out to fit the model's context: the room's ")).toBe(true);
    expect(sent[sent.length - 1].content).toBe("the question");
    expect(sent[sent.length - 2].content.startsWith("0099")).toBe(true);
    expect(fitted(c, 1_000_000).length).toBe(102);
  });

  it("keeps a long output's head and tail", () => {
    const output = "a".repeat(10) + "b".repeat(100) + "c".repeat(10);
    expect(headAndTail(output, 10)).toBe(`${"a".repeat(10)}\n[… 100 characters cut …]\n${"c".repeat(10)}`);
    expect(headAndTail("short", 10)).toBe("short");
  });
});

describe("the file tools", () => {
  it("count the lines between the common ends", () => {
    expect(changedLines("a\nb\nc\n", "a\nB\nc\n")).toEqual([1, 1]);
    expect(changedLines("", "a\nb\n")).toEqual([2, 0]);
    expect(changedLines("a\nb\n", "a\nb\n")).toEqual([0, 0]);
    expect(changedLines("a\nc\n", "a\nb1\nb2\nc\n")).toEqual([2, 0]);
    expect(changedLines("x", "x\ny")).toEqual([2, 1]);
  });

  it("edit one exact match only", () => {
    expect(replaced("f", "a b a", "b", "c")).toEqual({ text: "a c a" });
    expect(replaced("f", "a b a", "a", "c")).toMatchObject({ why: expect.stringContaining("occurs 2 times") });
    expect(replaced("f", "a", "z", "c")).toMatchObject({ why: expect.stringContaining("does not occur") });
    expect(replaced("f", "a", "", "c")).toHaveProperty("why");
  });

  it("are asked for by calls, which say what they lack", () => {
    expect(action({ name: "run", args: '{"cmd":"ls"}' })).toEqual({ kind: "run", cmd: "ls" });
    expect(action({ name: "run", args: "{}" })).toBeUndefined();
    expect(action({ name: "edit_file", args: '{"path":"a","old":"x"}' })).toEqual({
      kind: "file",
      call: { kind: "bad", label: "edit_file", why: "edit_file needs the strings `path`, `old` and `new`" },
    });
    expect(action({ name: "rm", args: "{}" })).toMatchObject({ kind: "file", call: { kind: "bad" } });
  });
});
