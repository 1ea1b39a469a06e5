// DUET_SANDBOX_IDLE_SECS=2: a restore and the checkpoints survive the
// container's sleep (the sleep's backup archives the restored /workspace;
// checkpoints live in R2, not in the container).
import { describe, expect, it } from "vitest";
import { call, get, joined, post, room } from "../support";

describe("checkpoints across a sleep", () => {
  it("keeps the restored workspace and the checkpoints", async () => {
    const r = room("cpsleep");
    const s = await joined(r, "user=ada&deltas=1");
    await call("PUT", `/api/rooms/${r}/files/f.txt`, "first");
    expect((await post(`/api/rooms/${r}/checkpoints`, { name: "first" })).status).toBe(200);
    await call("PUT", `/api/rooms/${r}/files/f.txt`, "second");
    expect((await post(`/api/rooms/${r}/checkpoints/c1/restore`, {})).body).toEqual({ restored: true });
    await s.until((f) => f.type === "duet_message" && f.message.event?.kind === "restore");
    // The container sleeps (after its backup), then tells the room.
    expect((await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "cd /tmp" })).status).toBe(200);
    await s.until((f) => f.type === "duet_state" && f.patch.shell?.cwd === "/tmp");
    await s.until((f) => f.type === "duet_state" && f.patch.shell?.cwd === "/workspace");
    expect((await get(`/api/rooms/${r}/files/f.txt`)).body).toBe("first");
    await call("PUT", `/api/rooms/${r}/files/f.txt`, "third");
    expect((await post(`/api/rooms/${r}/checkpoints/c1/restore`, {})).body).toEqual({ restored: true });
    expect((await get(`/api/rooms/${r}/files/f.txt`)).body).toBe("first");
    s.close();
  });
});
