// No model configured (DUET_AI_URL empty): the same shape as duet serve,
// the room told how to configure one on this backend; commands still run.
import { describe, expect, it } from "vitest";
import { joined, post, room } from "../support";

describe("without a model", () => {
  it("stores a system message saying how to configure one", async () => {
    const r = room("n");
    const bob = await joined(r, "user=bob");
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: "hello there", userId: "ada" });
    expect(status).toBe(200);
    expect(body.reply).toBeNull();
    expect(body.error).toContain("No model is configured");
    for (const needed of ["DUET_AI_URL", "DUET_AI_MODEL", "wrangler secret put DUET_AI_KEY", "/ai/v1"]) {
      expect(body.error).toContain(needed);
    }
    expect(body.messages.map((m: any) => [m.id, m.role, m.userId, m.text])).toEqual([
      ["000000000001", "user", "ada", "hello there"],
      ["000000000002", "system", "ada", body.error],
    ]);
    expect((await bob.untilType("cf_agent_state")).state.messages.length).toBe(1);
    expect(await bob.next()).toMatchObject({ type: "duet_ai", phase: "start" });
    expect(await bob.next()).toMatchObject({ type: "duet_ai", phase: "error", error: body.error });
    expect((await bob.next()).state.messages).toEqual(body.messages);
    const exec = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo fine" });
    expect([exec.status, exec.body.result.stdout]).toEqual([200, "fine\n"]);
  });
});
