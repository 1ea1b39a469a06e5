// The shared terminal while a room's container starts (3 s here): term_open
// is answered 503 with retryAfterMs, as a command is, and nobody hears of a
// terminal; once the container runs, the retried term_open opens it.
import { describe, expect, it } from "vitest";
import { joined, room, sleep } from "../support";

describe("a starting sandbox", () => {
  it("answers term_open with 503 and retryAfterMs, then opens the terminal when retried", async () => {
    const r = room("s");
    const ada = await joined(r, "user=ada");
    let answer = await ada.rpc("t0", "term_open", [{ cols: 80, rows: 24 }]);
    expect(answer).toMatchObject({ type: "rpc", id: "t0", success: false, status: 503, error: "the sandbox is starting", done: true });
    expect(answer.retryAfterMs).toBeGreaterThan(0);
    for (let i = 1; i < 20 && !answer.success; i++) {
      await sleep(answer.retryAfterMs);
      answer = await ada.rpc(`t${i}`, "term_open", [{ cols: 80, rows: 24 }]);
    }
    expect(answer.success, JSON.stringify(answer)).toBe(true);
    expect(answer.result).toEqual({ cols: 80, rows: 24, termId: answer.result.termId });
    const snapshot = await ada.until((f) => f.type === "duet_term" && f.phase === "data");
    expect(snapshot.snapshot).toBe(true);
    ada.close();
  });
});
