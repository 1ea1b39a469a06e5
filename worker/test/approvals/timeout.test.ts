// An agent's command nobody answers (DUET_APPROVAL_TIMEOUT_SECS=1 in this
// project): `decided` with approved false by "duet", nothing runs, and the
// block says it was not approved in time.
import { describe, expect, it } from "vitest";
import { joined, post, room, script } from "../support";

describe("an approval nobody answers", () => {
  it("is decided by duet after the timeout, and runs nothing", async () => {
    const r = room("late");
    await post(`/api/rooms/${r}/policy`, { policy: "ask" });
    const s = await joined(r, "user=ann");
    const key = await script(`late-${r}`, [{ kind: "stream", pieces: ["Sure.<run>touch /workspace/late</run>"] }]);
    const answer = post(`/api/rooms/${r}/message`, { text: `wait ${key}` });
    const request = await s.until((f) => f.type === "duet_approval");
    const decided = await s.until((f) => f.type === "duet_approval" && f.phase === "decided");
    expect(decided).toEqual({ type: "duet_approval", phase: "decided", approvalId: request.approvalId, approved: false, by: "duet" });
    expect((await answer).body.reply).toBe("Sure.\n\nError (touch /workspace/late):\nnot approved in time");
    expect((await post(`/api/rooms/${r}/approve`, { approvalId: request.approvalId, approved: true })).status).toBe(409);
    const ls = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "ls /workspace" });
    expect(ls.body.result.stdout).toBe("");
    s.close();
  });
});
