// The limits of docs/protocol.md "Limits", with small values (vitest.config.ts,
// project `limits`): 20 frames and 4096 bytes a second and 2 messages and 3
// commands a minute per socket; 3 messages and 4 commands a minute per room;
// 2 sockets per room. Rates refill continuously, so within a test a minute's
// budget does not come back.
import { describe, expect, it } from "vitest";
import { joined, openSocket, post, room, type Json } from "../support";

function expectRateLimited(body: Json, variable: string) {
  expect(body.error).toBe("rate limited");
  expect(Object.keys(body.details)).toEqual(["limit"]);
  expect(body.details.limit[0]).toContain(variable);
  expect(Number.isInteger(body.retryAfterMs) && body.retryAfterMs > 0).toBe(true);
}

describe("limits", () => {
  it("answers a room's messages over its rate with 429, Retry-After and retryAfterMs, storing nothing", async () => {
    const r = room("lim");
    for (let n = 0; n < 3; n++) expect((await post(`/api/rooms/${r}/message`, { text: `m${n}`, clientId: `c${n}` })).status).toBe(200);
    const over = await post(`/api/rooms/${r}/message`, { text: "one too many" });
    expect(over.status).toBe(429);
    expect(Object.keys(over.body)).toEqual(["error", "details", "retryAfterMs"]);
    expectRateLimited(over.body, "DUET_ROOM_MESSAGES_PER_MIN");
    expect(over.body.retryAfterMs).toBeGreaterThan(1000);
    expect(over.headers.get("retry-after")).toBe(String(Math.ceil(over.body.retryAfterMs / 1000)));
    // A repeated clientId stores nothing, so it is still answered.
    expect((await post(`/api/rooms/${r}/message`, { text: "m0", clientId: "c0" })).status).toBe(200);
    // The socket's rpc is over the room's rate too; other rooms are not.
    const s = await joined(r, "user=ada");
    const rpc = await s.rpc("m", "message", [{ text: "rpc" }]);
    expect([rpc.success, rpc.status, rpc.done]).toEqual([false, 429, true]);
    expect(Object.keys(rpc)).toEqual(["type", "id", "success", "error", "status", "details", "retryAfterMs", "done"]);
    expectRateLimited(rpc, "DUET_ROOM_MESSAGES_PER_MIN");
    // Other operations are not limited.
    expect((await post(`/api/rooms/${r}/cancel`, {})).status).toBe(200);
    expect((await post(`/api/rooms/${room("lim")}/message`, { text: "elsewhere" })).status).toBe(200);
    s.close();
  });

  it("limits a socket's messages and commands, then the room's people's commands", async () => {
    const r = room("lim");
    const s = await joined(r, "user=ada");
    for (const id of ["a", "b"]) expect((await s.rpc(id, "message", [{ text: id, clientId: id }])).success).toBe(true);
    // A repeat stores nothing and is not counted.
    expect((await s.rpc("again", "message", [{ text: "a", clientId: "a" }])).success).toBe(true);
    const third = await s.rpc("c", "message", [{ text: "c" }]);
    expect(third.status).toBe(429);
    expectRateLimited(third, "DUET_SOCKET_MESSAGES_PER_MIN");
    for (const n of [1, 2, 3]) expect((await s.rpc(`x${n}`, "exec", [{ cmd: `echo ${n}` }])).success).toBe(true);
    const fourth = await s.rpc("x4", "exec", [{ cmd: "echo 4" }]);
    expect(fourth.status).toBe(429);
    expectRateLimited(fourth, "DUET_SOCKET_COMMANDS_PER_MIN");
    // The room took three of its four; HTTP gets the last one.
    expect((await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo 5" })).status).toBe(200);
    const over = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo 6" });
    expect(over.status).toBe(429);
    expectRateLimited(over.body, "DUET_ROOM_COMMANDS_PER_MIN");
    // Other operations are not limited.
    expect((await s.rpc("i", "interrupt", [{}])).result).toEqual({ interrupted: false });
    s.close();
  });

  it("counts a rename as a message (it stores a record), refusing it whole over the rate", async () => {
    const r = room("lim");
    const s = await joined(r, "user=ada");
    expect((await s.rpc("n1", "rename", [{ name: "ann" }])).result).toEqual({ name: "ann" });
    expect((await s.rpc("m", "message", [{ text: "hi", to: "room" }])).success).toBe(true);
    const over = await s.rpc("n2", "rename", [{ name: "bea" }]);
    expect([over.success, over.status]).toEqual([false, 429]);
    expectRateLimited(over, "DUET_SOCKET_MESSAGES_PER_MIN");
    // Still ann: the refused rename changed nothing.
    const later = await joined(r, "user=carl");
    const said = await later.rpc("m2", "message", [{ text: "who?", to: "room" }]);
    expect(said.result.messages.map((m: Json) => m.userId)).toEqual(["ada", "ann", "carl"]);
    s.close();
  });

  it("drops frames over a socket's frame and byte rates with duet_error, and answers an rpc as one", async () => {
    const r = room("lim");
    const s = await joined(r, "user=ada");
    // FLOOD frames against a burst of 20, then an rpc. A loaded machine can
    // deliver them so slowly that the bucket (20 a second) refilled enough
    // for the rpc: then again, at most three times.
    const FLOOD = 100;
    let errors: Json[] = [];
    let answer: Json = {};
    let refilled = 0;
    for (let attempt = 0; attempt < 3 && answer.status !== 429; attempt++) {
      const started = Date.now();
      for (let n = 0; n < FLOOD; n++) s.send({ type: "duet_typing" });
      s.send({ type: "rpc", id: "late", method: "cancel", args: [] });
      const seen: Json[] = [];
      answer = await s.until((f) => {
        if (f.type === "duet_error") seen.push(f);
        return f.type === "rpc";
      });
      errors = seen;
      refilled = Math.floor(((Date.now() - started) / 1000) * 20);
    }
    // The rest are dropped, less what the bucket refilled meanwhile.
    expect(errors.length).toBeGreaterThanOrEqual(Math.max(1, FLOOD - 21 - refilled));
    expect(Object.keys(errors[0])).toEqual(["type", "error", "retryAfterMs"]);
    expect(errors[0].error).toBe("rate limited");
    expect(errors[0].retryAfterMs).toBeGreaterThan(0);
    expect([answer.id, answer.status]).toEqual(["late", 429]);
    expectRateLimited(answer, "DUET_SOCKET_FRAMES_PER_SEC");
    // Bytes: wait until a frame passes again, then two frames of 3000 bytes.
    const s2 = await joined(r, "user=bob");
    const pad = "x".repeat(3000);
    s2.send({ type: "nope", pad });
    expect((await s2.untilType("duet_error")).error).toContain("unknown frame type");
    s2.send({ type: "nope", pad });
    const dropped = await s2.untilType("duet_error");
    expect(dropped.error).toBe("rate limited");
    // Still open: it answers.
    await new Promise((ok) => setTimeout(ok, dropped.retryAfterMs + 50));
    expect((await s2.rpc("after", "cancel", [])).result).toEqual({ cancelled: false });
    s.close();
    s2.close();
  });

  it("answers an upgrade over the room's socket cap with 503 and Retry-After", async () => {
    const r = room("lim");
    const a = await joined(r);
    const b = await joined(r);
    const opened = await openSocket(`/api/rooms/${r}/ws`);
    expect(opened.status).toBe(503);
    const body = JSON.parse(opened.body);
    expect(Object.keys(body)).toEqual(["error", "retryAfterMs"]);
    expect(body.error).toBe("too many sockets");
    // Another room is not full; the room takes one again once one left.
    expect((await openSocket(`/api/rooms/${room("lim")}/ws`)).status).toBe(101);
    b.close();
    let status = 0;
    for (let i = 0; i < 50 && status !== 101; i++) {
      status = (await openSocket(`/api/rooms/${r}/ws`)).status;
      if (status !== 101) await new Promise((ok) => setTimeout(ok, 100));
    }
    expect(status).toBe(101);
    a.close();
  });
});

describe("token buckets", () => {
  it("allow a burst up to the rate, refill continuously and say how long to wait", async () => {
    const { Bucket } = await import("../../src/limits");
    const b = new Bucket(3, 60_000, "rule", 0);
    expect([b.take(1, 0), b.take(1, 0), b.take(1, 0)]).toEqual([0, 0, 0]);
    expect(b.take(1, 0)).toBe(20_000);
    expect(b.take(1, 10_000)).toBe(10_000);
    expect(b.take(1, 20_000)).toBe(0);
    // Never more than the rate, however long it waited.
    expect([b.take(3, 10_000_000), b.take(1, 10_000_000)]).toEqual([0, 20_000]);
    // A cost above the rate takes the whole bucket.
    const bytes = new Bucket(100, 1_000, "bytes", 0);
    expect([bytes.take(5_000, 0), bytes.take(1, 0)]).toEqual([0, 10]);
  });
});
