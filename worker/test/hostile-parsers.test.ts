// Hostile input to the worker's parsers (issue 10, item 8): the model's SSE
// stream, the Output blocks of agent replies, and the text rules, on random
// and mutated input from a seeded generator (test/fuzz.ts). Nothing throws;
// a stream split anywhere reads the same; what is valid stays valid.
import { describe, expect, it } from "vitest";
import { extractCommands, parseBlocks, renderReply } from "../src/blocks";
import { parseObject, notServeJson } from "../src/http";
import { SseParser, chunkEvents, type Event } from "../src/model";
import { parseOp, rpcOp, METHODS } from "../src/ops";
import { type Run } from "../src/protocol";
import { capText, firstChars, nameProblem, trim, validRoomId } from "../src/text";
import { Gen } from "./fuzz";

const enc = new TextEncoder();

/** A plausible SSE stream: deltas (some hostile), comments, errors, blank lines, finish and done. */
function stream(g: Gen): string {
  let s = "";
  for (let n = g.int(12); n > 0; n--) {
    const eol = g.pick(["\n", "\r\n", "\n\n", "\r\n\r\n"]);
    switch (g.int(7)) {
      case 0:
        s += `: ${g.string(10).replace(/[\r\n]/g, "")}${eol}`;
        break;
      case 1:
        s += `data: ${JSON.stringify({ error: g.pick([{ message: g.string() }, g.string(), g.json(2)]) })}${eol}`;
        break;
      case 2:
        s += `data: ${JSON.stringify(g.json(3))}${eol}`;
        break;
      case 3:
        s += `${g.pick(["event: x", "id: 3", "retry: 5", "data:", "data: ", "data: {oops"])}${eol}`;
        break;
      default:
        s += `data: ${JSON.stringify({ choices: [{ delta: { content: g.string(8) }, finish_reason: g.pick([null, null, "stop"]) }] })}${eol}`;
    }
  }
  return s + g.pick(["", "data: [DONE]\n", "data: [DONE]"]);
}

function readAll(bytes: Uint8Array, cuts: number[]): Event[] {
  const p = new SseParser();
  const events: Event[] = [];
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    events.push(...p.feed(bytes.slice(at, cut)));
    at = cut;
  }
  events.push(...p.feed(bytes.slice(at)), ...p.finish());
  return events;
}

describe("hostile input to the parsers", () => {
  it("the SSE parser: random bytes never throw, and a stream split anywhere reads the same", () => {
    const g = new Gen(7);
    for (let i = 0; i < 1500; i++) {
      const junk = Uint8Array.from({ length: g.int(200) }, () => g.int(256));
      expect(() => readAll(junk, [g.int(junk.length + 1)])).not.toThrow();
      const bytes = enc.encode(stream(g));
      const whole = readAll(bytes, []);
      const cuts = Array.from({ length: g.int(6) }, () => g.int(bytes.length + 1));
      expect(readAll(bytes, cuts), `seed 7 case ${i}`).toEqual(whole);
      for (const e of whole) if (e.kind === "delta" || e.kind === "error") expect(typeof (e.kind === "delta" ? e.text : e.message)).toBe("string");
    }
    for (let i = 0; i < 500; i++) expect(() => chunkEvents(g.json(4))).not.toThrow();
  });

  it("the blocks parser: mutated replies never throw and give only prose, output and error pieces", () => {
    const g = new Gen(8);
    for (let i = 0; i < 1500; i++) {
      const runs: Run[] = Array.from({ length: g.int(4) }, () => ({
        cmd: trim(g.string(10)) || "ls",
        stdout: g.string(30),
        stderr: g.string(10),
        exitCode: g.pick([0, 1, null, 130]),
        ...(g.chance(0.2) && { error: g.string(10) }),
      }));
      const reply = renderReply(g.string(40), runs);
      // Mutate the rendered text: cut it, splice hostile pieces in, drop a part.
      const at = g.int(reply.length + 1);
      const piece = g.pick(["Output (", "Error (", "):\n", "\n\n", "<run>", "</run>", g.string(5)]);
      const mutated = g.pick([reply.slice(0, at), reply.slice(0, at) + piece + reply.slice(at), reply.slice(at), reply]);
      for (const blocks of [parseBlocks(mutated), parseBlocks(mutated, runs), parseBlocks(mutated, g.chance(0.5) ? [] : runs.slice(1))]) {
        for (const b of blocks) expect(["prose", "output", "error"]).toContain(b.kind);
      }
      const [prose, cmds] = extractCommands(mutated);
      expect(prose).toBe(trim(prose));
      for (const c of cmds) expect(c !== "" && c === trim(c)).toBe(true);
    }
  });

  it("bodies, rpc frames and text rules: a 400 naming fields, or a valid operation", () => {
    const g = new Gen(9);
    const valid = { text: "hi", userId: "ada", clientId: "c", cmd: "ls", timeoutMs: 5, cwd: "/tmp", env: { A: "b" }, execId: "x1", turnId: "t1" };
    for (let i = 0; i < 3000; i++) {
      const body = g.body(valid);
      const bytes = typeof body === "string" ? enc.encode(body) : body;
      let obj: Record<string, unknown>;
      try {
        obj = parseObject(bytes);
      } catch (e: any) {
        expect([e.status, Object.keys(e.details ?? {})], `case ${i}`).toEqual([400, ["body"]]);
        continue;
      }
      for (const method of METHODS) {
        try {
          const op = parseOp(method, obj);
          expect(op.kind).toBe(method);
          if (op.kind === "message") expect(op.text === trim(op.text) && op.text !== "").toBe(true);
        } catch (e: any) {
          expect(e.status, `${method} ${JSON.stringify(obj)}`).toBe(400);
          expect(Object.keys(e.details).length).toBeGreaterThan(0);
        }
      }
      try {
        rpcOp({ type: "rpc", id: 1, method: g.pick([...METHODS, "nope"]), args: g.pick([[obj], obj, [g.json(2)], undefined]) });
      } catch (e: any) {
        expect(e.status === 400 || e.constructor.name === "UnknownMethod", String(e)).toBe(true);
      }
      const s = g.string(70);
      expect(() => [validRoomId(s), nameProblem(s), capText(s, g.int(64)), firstChars(s, g.int(10)), notServeJson(s)]).not.toThrow();
    }
  });
});
