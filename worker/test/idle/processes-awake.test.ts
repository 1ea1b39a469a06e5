// DUET_SANDBOX_IDLE_SECS=2: a running background process keeps the
// sandbox from its idle sleep; once it was killed the sandbox sleeps.
import { describe, expect, it } from "vitest";
import { call, get, joined, post, room, sleep } from "../support";

describe("a background process", () => {
  it("keeps the sandbox awake while it runs", async () => {
    const r = room("idle");
    const s = await joined(r, "deltas=1");
    expect((await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "cd /tmp" })).status).toBe(200);
    const started = await post(`/api/rooms/${r}/processes`, { cmd: "sleep 600" });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const id = started.body.process.id;
    // Well past the idle time (and the looks after the command).
    await sleep(10_000);
    expect((await get(`/api/rooms/${r}/processes/${id}`)).body.process.status).toBe("running");
    const pwd = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "pwd" });
    expect(pwd.body.result.stdout).toBe("/tmp\n");
    expect((await call("DELETE", `/api/rooms/${r}/processes/${id}`)).body).toEqual({ killed: true });
    await s.until((f) => f.type === "duet_state" && f.patch.shell?.cwd === "/workspace");
  });
});
