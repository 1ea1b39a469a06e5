// While a room's container starts (the stand-in takes
// DUET_STANDIN_START_SECS=3 here, failing meanwhile as the SDK does): a
// person's command is answered 503 with Retry-After, announced but not
// recorded, and succeeds when retried; the agent's command waits for it.
import { describe, expect, it } from "vitest";
import { chunked, joined, post, room, script, sleep, ws } from "../support";

describe("a starting sandbox", () => {
  it("answers 503 with Retry-After, then runs the command once it started", async () => {
    const r = room("s");
    const ada = await joined(r, "user=ada");
    const first = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo hi" });
    expect([first.status, first.body]).toEqual([503, { error: "the sandbox is starting" }]);
    const retryAfter = Number(first.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    const start = await ada.until((f) => f.type === "duet_exec" && f.phase === "start");
    const complete = await ada.until((f) => f.type === "duet_exec" && f.phase === "complete");
    expect([complete.execId, complete.exitCode, complete.error]).toEqual([start.execId, null, "the sandbox is starting"]);
    let answer = first;
    for (let i = 0; i < 20 && answer.status === 503; i++) {
      await sleep(Number(answer.headers.get("retry-after")) * 1000);
      answer = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo hi" });
    }
    expect([answer.status, answer.body.result?.stdout]).toEqual([200, "hi\n"]);
    const carl = await ws(r);
    await carl.next();
    expect((await carl.next()).state.execs.map((e: { stdout: string }) => e.stdout)).toEqual(["hi\n"]);
  });

  it("answers an rpc exec meanwhile with status 503 and retryAfterMs", async () => {
    const r = room("s");
    const ada = await joined(r, "user=ada");
    const answer = await ada.rpc("x", "exec", [{ cmd: "echo hi" }]);
    expect([answer.success, answer.status, answer.error]).toEqual([false, 503, "the sandbox is starting"]);
    expect(answer.retryAfterMs).toBeGreaterThan(0);
    expect(answer.retryAfterMs % 1000).toBe(0);
  });

  it("makes the agent's command wait for it", async () => {
    const r = room("s");
    const key = await script(r, [chunked("<run>echo waited</run>", 5)]);
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: `go ${key}` });
    expect(status).toBe(200);
    // Trimmed at both ends: no prose, so it starts with the block.
    expect(body.reply).toBe("Output (echo waited):\nwaited");
  });
});
