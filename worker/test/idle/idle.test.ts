// DUET_SANDBOX_IDLE_SECS=2: a room's sandbox sleeps after two seconds
// without a command, and the room says at once that the next command runs
// in a fresh shell in /workspace (docs/protocol.md "On Cloudflare").
import { describe, expect, it } from "vitest";
import { joined, post, room } from "../support";

describe("a sleeping sandbox", () => {
  it("puts the room's shell back in /workspace, for every socket", async () => {
    const r = room("idle");
    const deltas = await joined(r, "user=ada&deltas=1");
    const full = await joined(r, "user=bob");
    const moved = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "cd /tmp && export GONE=1" });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    await deltas.until((f) => f.type === "duet_state" && f.patch.shell.cwd === "/tmp");
    // The container sleeps (its backup first), then tells the room.
    expect(await deltas.until((f) => f.type === "duet_state")).toEqual({ type: "duet_state", patch: { shell: { cwd: "/workspace" } } });
    await full.until((f) => f.type === "cf_agent_state" && f.state.shell.cwd === "/workspace");
    const after = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: 'pwd; echo "[$GONE]"' });
    expect(after.body.result.stdout).toBe("/workspace\n[]\n");
  });
});
