// The shared terminal over real sockets, through the stand-in to duet
// serve's terminal (a real bash on a pseudo-terminal in the room's
// sandbox): the frames and their order, the snapshot, two people typing,
// a late viewer, detach, the smallest rule, exit, term_close, cleanup, the
// error shapes, and the agent's context holding the screen. Each viewer
// draws what it receives (test/terminal-support.ts).
import { describe, expect, it } from "vitest";
import { Screen } from "../src/screen";
import { fromBase64 } from "../src/sandbox/bytes";
import { joined, modelRequests, post, room, script, ws, type Json } from "./support";
import { Viewer, attach, encode, open } from "./terminal-support";

describe("the shared terminal", () => {
  it("opens for everyone, answers, then redraws the screen for the opener", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann&_pk=ann1&deltas=1");
    const bob = await joined(r, "user=bob&_pk=bob1");
    await ann.until((f) => f.type === "duet_presence_delta");
    const { answer, before, snapshot } = await open(ann, "1", { cols: 100, rows: 30 });
    expect(answer).toEqual({ termId: answer.termId, cols: 100, rows: 30 });
    expect(typeof answer.termId).toBe("string");
    const opened = before.find((f) => f.type === "duet_term");
    expect(opened).toEqual({ type: "duet_term", phase: "open", termId: answer.termId, by: "ann", cols: 100, rows: 30 });
    expect(before).toContainEqual({ type: "duet_state", patch: { terminal: { termId: answer.termId, cols: 100, rows: 30 } } });
    expect(Object.keys(snapshot)).toEqual(["type", "phase", "termId", "data", "snapshot"]);
    // Everyone hears of it; a socket without deltas gets the whole state.
    expect(await bob.until((f) => f.type === "duet_term")).toEqual(opened);
    const state = await bob.until((f) => f.type === "cf_agent_state");
    expect(state.state.terminal).toEqual({ termId: answer.termId, cols: 100, rows: 30 });
    // A socket that joins now finds it in its connect state.
    const cy = await ws(r, "user=cy");
    expect((await cy.untilType("cf_agent_state")).state.terminal).toEqual({ termId: answer.termId, cols: 100, rows: 30 });
    cy.close();
    ann.close();
    bob.close();
  });

  it("takes two people's typing and shows both the echo, with who types", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann&_pk=ann1");
    const bob = await joined(r, "user=bob&_pk=bob1");
    const a = await attach(ann, "a", 80, 24);
    const b = await attach(bob, "b", 80, 24);
    expect(b.termId).toBe(a.termId);
    a.type("echo from-ann-$((6*7))\r");
    await a.shows("from-ann-42");
    await b.shows("from-ann-42");
    expect(await b.frame((f) => f.type === "duet_typing")).toEqual({ type: "duet_typing", id: "ann1", name: "ann", termId: a.termId });
    b.type("echo from-bob-$((7*7))\r");
    await a.shows("from-bob-49");
    await b.shows("from-bob-49");
    ann.close();
    bob.close();
  });

  it("shows a late viewer the current screen: a half-typed line, and a full-screen program", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann");
    const a = await attach(ann, "a", 80, 24);
    a.type("echo half-typed-line");
    await a.shows("echo half-typed-line");
    const bob = await joined(r, "user=bob");
    const b = await attach(bob, "b", 80, 24);
    expect(await b.text()).toContain("echo half-typed-line");
    // Opening again while attached re-sends the snapshot.
    ann.send({ type: "rpc", id: "again", method: "term_open", args: [{}] });
    const again = await a.frame((f) => f.type === "rpc" && f.id === "again");
    expect(again.result).toEqual({ cols: 80, rows: 24, termId: a.termId });
    const resent = await a.frame((f) => f.type === "duet_term" && f.snapshot === true);
    const redrawn = new Screen(80, 24);
    redrawn.write(fromBase64(resent.data));
    await new Promise<void>((ok) => redrawn.afterWrites(ok));
    expect(redrawn.text()).toContain("echo half-typed-line");
    // The alternate screen of a full-screen program (less) comes in the snapshot.
    a.type("\x15seq 1 500 | less\r");
    await a.shows(/^1\n2\n3/m);
    const cy = await joined(r, "user=cy");
    const c = await attach(cy, "c", 80, 24);
    const text = await c.text();
    expect(text).toMatch(/^1\n2\n3/);
    expect(text).not.toContain("half-typed-line");
    // Leaving less, the shell's screen comes back for the late viewer too.
    a.type("q");
    await c.shows("seq 1 500 | less");
    for (const s of [ann, bob, cy]) s.close();
  });

  it("detaches one socket; the terminal runs on; a wrong detach is a 404", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann");
    const bob = await joined(r, "user=bob");
    const a = await attach(ann, "a", 80, 24);
    const b = await attach(bob, "b", 80, 24);
    const rpc = async (v: Viewer, id: string, method: string, args: Json) => {
      v.ws.send({ type: "rpc", id, method, args });
      return v.frame((f) => f.type === "rpc" && f.id === id);
    };
    expect((await rpc(a, "d1", "term_detach", [{ termId: a.termId }])).result).toEqual({ detached: true });
    const again = await rpc(a, "d2", "term_detach", [{ termId: a.termId }]);
    expect(again).toEqual({
      type: "rpc",
      id: "d2",
      success: false,
      error: "not attached to that terminal",
      status: 404,
      details: { termId: [again.details.termId[0]] },
      done: true,
    });
    const other = await rpc(b, "d3", "term_detach", [{ termId: "not-it" }]);
    expect(other).toMatchObject({ success: false, status: 404, error: "not attached to that terminal" });
    // Input from a detached socket is refused; bob still types into it.
    a.type("echo no\r");
    expect((await a.frame((f) => f.type === "duet_error")).error).toContain("not attached");
    b.type("echo still-$((1+1))\r");
    await b.shows("still-2");
    ann.close();
    bob.close();
  });

  it("follows the smallest attached window, re-negotiated as sockets come, resize and go", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann");
    const bob = await joined(r, "user=bob");
    const a = await attach(ann, "a", 100, 30);
    const b = await attach(bob, "b", 80, 40);
    // bob's answer already has the size with bob counted.
    expect([b.screen.cols, b.screen.rows]).toEqual([80, 30]);
    const resized = (v: Viewer, cols: number, rows: number) =>
      v.frame((f) => f.type === "duet_term" && f.phase === "resize" && f.cols === cols && f.rows === rows);
    expect(await resized(a, 80, 30)).toEqual({ type: "duet_term", phase: "resize", termId: a.termId, cols: 80, rows: 30 });
    a.type("stty size\r");
    await a.shows("30 80");
    // bob's window grows: the terminal is as large as ann's again.
    bob.send({ type: "duet_term_resize", termId: b.termId, cols: 120, rows: 50 });
    await resized(a, 100, 30);
    await resized(b, 100, 30);
    // ann shrinks, then leaves: bob's window rules.
    ann.send({ type: "duet_term_resize", termId: a.termId, cols: 60, rows: 20 });
    await resized(b, 60, 20);
    ann.close();
    await resized(b, 120, 50);
    b.type("stty size\r");
    await b.shows("50 120");
    bob.close();
  });

  it("ends when its shell exits: exit to everyone, the state says none runs", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann&deltas=1");
    const bob = await joined(r, "user=bob");
    const a = await attach(ann, "a", 80, 24);
    a.type("exit 3\r");
    const exit = { type: "duet_term", phase: "exit", termId: a.termId, exitCode: 3 };
    expect(await a.frame((f) => f.type === "duet_term" && f.phase === "exit")).toEqual(exit);
    await a.frame((f) => f.type === "duet_state" && f.patch.terminal === null);
    expect(await bob.until((f) => f.type === "duet_term" && f.phase === "exit")).toEqual(exit);
    expect((await bob.until((f) => f.type === "cf_agent_state")).state.terminal).toBeNull();
    // The next open starts a new one.
    a.stop();
    const { answer } = await open(ann, "again", {});
    expect(answer.termId).not.toBe(a.termId);
    expect([answer.cols, answer.rows]).toEqual([80, 24]);
    ann.close();
    bob.close();
  });

  it("ends for everyone on term_close; closing one that does not run is a 404", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann");
    const bob = await joined(r, "user=bob");
    const { answer } = await open(ann, "o", {});
    const closed = await bob.rpc("c", "term_close", [{ termId: answer.termId }]);
    expect(closed).toEqual({ type: "rpc", id: "c", success: true, result: { closed: true }, done: true });
    const exit = { type: "duet_term", phase: "exit", termId: answer.termId, exitCode: null };
    expect(await ann.until((f) => f.type === "duet_term" && f.phase === "exit")).toEqual(exit);
    const again = await bob.rpc("c2", "term_close", [{ termId: answer.termId }]);
    expect(again).toMatchObject({ success: false, status: 404, error: "no such terminal", done: true });
    expect(Object.keys(again.details)).toEqual(["termId"]);
    ann.close();
    bob.close();
  });

  it("ends at a cleanup: exit before duet_cleanup", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann");
    const { answer } = await open(ann, "o", {});
    ann.send({ type: "rpc", id: "clean", method: "cleanup", args: [] });
    const frames: Json[] = [];
    for (;;) {
      const f = await ann.next();
      frames.push(f);
      if (f.type === "rpc" && f.id === "clean") break;
    }
    const exitAt = frames.findIndex((f) => f.type === "duet_term" && f.phase === "exit");
    const cleanupAt = frames.findIndex((f) => f.type === "duet_cleanup");
    expect(frames[exitAt]).toEqual({ type: "duet_term", phase: "exit", termId: answer.termId, exitCode: null });
    expect(exitAt).toBeLessThan(cleanupAt);
    expect(frames[frames.length - 1].success, JSON.stringify(frames[frames.length - 1])).toBe(true);
    const state = frames.filter((f) => f.type === "cf_agent_state").pop();
    expect(state.state.terminal).toBeNull();
    ann.close();
  });

  it("refuses bad frames and bad sizes with the documented shapes", async () => {
    const r = room("term");
    const ann = await joined(r, "user=ann");
    const bob = await joined(r, "user=bob");
    const bad = await ann.rpc("b1", "term_open", [{ cols: "wide", rows: 24 }]);
    expect(bad).toMatchObject({ success: false, status: 400, error: "invalid request", details: { cols: ["must be a whole number"] } });
    const half = await ann.rpc("b2", "term_open", [{ cols: 80 }]);
    expect(half).toMatchObject({ success: false, status: 400 });
    expect(Object.keys(half.details)).toEqual(["rows"]);
    const tall = await ann.rpc("b3", "term_open", [{ cols: 80, rows: 2.5 }]);
    expect(tall.details).toEqual({ rows: ["must be a whole number"] });
    const { answer } = await open(ann, "o", { cols: 80, rows: 24 });
    // Not attached: bob's input and resize are refused.
    bob.send({ type: "duet_term_input", termId: answer.termId, data: encode("x") });
    expect((await bob.untilType("duet_error")).error).toContain("not attached");
    bob.send({ type: "duet_term_resize", termId: answer.termId, cols: 10, rows: 10 });
    expect((await bob.untilType("duet_error")).error).toContain("not attached");
    // Attached, but bad data or sizes.
    ann.send({ type: "duet_term_input", termId: answer.termId, data: "not base64!" });
    expect((await ann.untilType("duet_error")).type).toBe("duet_error");
    ann.send({ type: "duet_term_input", termId: answer.termId, data: btoa("x".repeat(64 * 1024 + 1)) });
    expect((await ann.untilType("duet_error")).type).toBe("duet_error");
    ann.send({ type: "duet_term_resize", termId: answer.termId, cols: "501", rows: 10 });
    expect((await ann.untilType("duet_error")).type).toBe("duet_error");
    ann.send({ type: "duet_term_input", termId: "other", data: encode("x") });
    expect((await ann.untilType("duet_error")).type).toBe("duet_error");
    // The terminal still works for ann.
    const a = new Viewer(ann, answer.termId, 80, 24);
    a.type("echo fine-$((2+3))\r");
    await a.shows("fine-5");
    const detach = await bob.rpc("d", "term_detach", [{}]);
    expect(detach).toMatchObject({ success: false, status: 400, details: { termId: ["must be a terminal's id"] } });
    ann.close();
    bob.close();
  });

  it("shows the agent the terminal's screen", async () => {
    const r = room("term");
    const key = await script(r, [{ kind: "whole", text: "I see it." }]);
    const ann = await joined(r, "user=ann");
    const a = await attach(ann, "a", 80, 24);
    a.type("echo screen-marker-$((40+2))\r");
    await a.shows("screen-marker-42");
    const { status } = await post(`/api/rooms/${r}/message`, { text: `what went wrong in the terminal? ${key}`, userId: "ann" });
    expect(status).toBe(200);
    const [request] = await modelRequests(r);
    const messages: { role: string; content: string }[] = request.body.messages;
    const note = messages.find((m) => m.content.startsWith("[the room's terminal, 80x24: its screen now, as text]\n"));
    expect(note, JSON.stringify(messages)).toBeDefined();
    expect(note?.content).toContain("screen-marker-42");
    expect(messages[messages.length - 1].content).toContain("what went wrong in the terminal?");
    ann.close();
  });
});
