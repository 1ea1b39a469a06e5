// The pure parts of the agent's project context and its run tool: which
// words name files, what a refused or odd read says, and how streamed tool
// calls become tags (docs/protocol.md "What the agent knows of the project").
import { describe, expect, it } from "vitest";
import { agentsNote, mentionBlock, mentions, textWithin } from "../src/context";
import { chunkEvents } from "../src/model";
import { ToolCalls, ToolOffer, toolsMode } from "../src/tools";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("@path mentions", () => {
  it("are words that start with @, without trailing punctuation, each once", () => {
    expect(mentions("see @a.txt, @b/c.rs; (@not) x@y @a.txt @d.md!?\"')]} @")).toEqual(["a.txt", "b/c.rs", "d.md"]);
    expect(mentions("@first\tand\u00a0@second\u2003@third")).toEqual(["first", "second", "third"]);
    expect(mentions("@.")).toEqual([]);
  });

  it("leave @agent at the start of a line alone, but not elsewhere", () => {
    expect(mentions("@agent fix it")).toEqual([]);
    expect(mentions("hi\n@agent: fix it\r\n@agent\n  @agent indented")).toEqual([]);
    expect(mentions("@agent fix @agent")).toEqual(["agent"]);
    expect(mentions("ask @agent")).toEqual(["agent"]);
    expect(mentions("@agents.md")).toEqual(["agents.md"]);
  });
});

describe("context texts", () => {
  it("say what a mention found", () => {
    expect(mentionBlock("a", { kind: "missing" })).toBe("[@a: no such file in /workspace]");
    expect(mentionBlock("../a", { kind: "outside" })).toBe("[@../a: not a path inside /workspace]");
    expect(mentionBlock("d", { kind: "folder" })).toBe("[@d: a folder, not a file]");
    expect(mentionBlock("b", { kind: "file", bytes: new Uint8Array([0xc3]) })).toBe("[@b: 1 bytes and not text: not shown]");
    expect(mentionBlock("e", { kind: "file", bytes: new Uint8Array() })).toBe("[@e: 0 bytes]\n");
    expect(mentionBlock("f", { kind: "failed", why: "disk on fire" })).toBe("[@f: could not be read: disk on fire]");
  });

  it("are text when the bytes shown are UTF-8 (src/ai/context.rs text_within)", () => {
    // Valid within the limit; what lies beyond is not looked at.
    expect(textWithin(new Uint8Array([0x61, 0x62, 0xff]), 2)).toEqual(["ab", true]);
    // A character the limit cut is left out; a broken one is not text.
    expect(textWithin(bytes("a€"), 3)).toEqual(["a", true]);
    expect(textWithin(new Uint8Array([0x61, 0xe2, 0x82]), 3)).toBeUndefined();
    expect(textWithin(new Uint8Array([0xc0, 0x80]), 8)).toBeUndefined();
    expect(textWithin(new Uint8Array([0xed, 0xa0, 0x80]), 8)).toBeUndefined();
    expect(textWithin(new Uint8Array([0xf4, 0x90, 0x80, 0x80]), 8)).toBeUndefined();
    expect(textWithin(bytes("\ufeffhi 😀"), 100)).toEqual(["\ufeffhi 😀", false]);
    expect(textWithin(bytes("😀"), 3)).toEqual(["", true]);
  });

  it("cut AGENTS.md back to a whole character", () => {
    expect(agentsNote(bytes("aé"), 2)).toBe("[the project's instructions: /workspace/AGENTS.md]\na\n[AGENTS.md is 3 bytes: only the first 2 are shown]");
    expect(agentsNote(bytes("aé"), 3)).toBe("[the project's instructions: /workspace/AGENTS.md]\naé");
    expect(agentsNote(new Uint8Array(), 10)).toBeUndefined();
  });
});

describe("tool calls", () => {
  it("are gathered by index, their arguments in pieces, in index order", () => {
    const calls = new ToolCalls();
    calls.add({ index: 1, name: "run", args: '{"cmd":' });
    calls.add({ index: 0, name: "run", args: "" });
    calls.add({ index: 1, args: ' "b"}' });
    calls.add({ index: 0, args: '{"cmd":"a"}' });
    expect(calls.list()).toEqual([
      { name: "run", args: '{"cmd":"a"}' },
      { name: "run", args: '{"cmd": "b"}' },
    ]);
  });

  it("are read from a chunk's delta and a whole answer's message; without an index, by their place", () => {
    const delta = { choices: [{ delta: { tool_calls: [{ index: 3, id: "c", type: "function", function: { name: "run", arguments: "{" } }] } }] };
    expect(chunkEvents(delta)).toEqual([{ kind: "tool", call: { index: 3, name: "run", args: "{" } }]);
    const whole = {
      choices: [
        {
          message: { content: null, tool_calls: [{ function: { name: "run", arguments: '{"cmd":"ls"}' } }, { function: { name: "run", arguments: { cmd: "x" } } }] },
          finish_reason: "tool_calls",
        },
      ],
    };
    expect(chunkEvents(whole)).toEqual([
      { kind: "tool", call: { index: 0, name: "run", args: '{"cmd":"ls"}' } },
      { kind: "tool", call: { index: 1, name: "run" } },
      { kind: "finished" },
    ]);
  });

  it("are offered by mode; under auto, until that model refused", () => {
    expect([toolsMode(undefined), toolsMode("on"), toolsMode(" OFF "), toolsMode("yes")]).toEqual(["auto", "on", "off", "auto"]);
    const auto = new ToolOffer("auto");
    auto.refused("http://m/v1/", "a");
    expect([auto.offers("http://m/v1", "a"), auto.offers("http://m/v1", "b"), auto.fallsBack()]).toEqual([false, true, true]);
    const on = new ToolOffer("on");
    on.refused("http://m/v1", "a");
    expect([on.offers("http://m/v1", "a"), on.fallsBack(), new ToolOffer("off").offers("http://m/v1", "a")]).toEqual([true, false, false]);
  });
});
