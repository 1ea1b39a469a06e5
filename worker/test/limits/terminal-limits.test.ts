// Terminal input counts against a socket's bytes per second, not its frames
// (20 frames/s and 4096 bytes/s here): keystrokes sent one frame each pass
// the frame rate, and input over the byte rate is dropped with duet_error.
import { describe, expect, it } from "vitest";
import { joined, room } from "../support";
import { attach } from "../terminal-support";

describe("terminal input and the socket limits", () => {
  it("counts bytes, not frames", async () => {
    const r = room("tl");
    const ann = await joined(r, "user=ann");
    const a = await attach(ann, "a", 80, 24);
    // 30 one-key frames at once (about 2.5 KiB): half as many again as the frame rate.
    for (const key of "echo keys-" + "k".repeat(10) + "-$((3*3))\r") a.type(key);
    await a.shows(`keys-${"k".repeat(10)}-9`);
    expect(a.frames.filter((f) => f.type === "duet_error")).toEqual([]);
    // Two frames of about 4 KiB each: the second is over the byte rate.
    a.type(`#${"x".repeat(3000)}`);
    a.type(`#${"y".repeat(3000)}`);
    const refused = await a.frame((f) => f.type === "duet_error");
    expect(refused).toMatchObject({ type: "duet_error", error: "rate limited" });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    ann.close();
  });
});
