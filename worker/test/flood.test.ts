// A flooding socket cannot slow or close its neighbours (issue 10, item 7),
// with the default limits (100 frames a second per socket): one socket sends
// 2,000 frames as fast as it can; another still gets the room's fan-out and
// its rpc answers; the flooder gets `duet_error`s and stays open.
import { describe, expect, it } from "vitest";
import { joined, post, room, type Json } from "./support";

describe("flood", () => {
  it("drops a flooder's frames over its rate without touching its neighbours", async () => {
    const r = room("flood");
    const flooder = await joined(r, "user=eve&_pk=eve");
    const calm = await joined(r, "user=ada&_pk=ada");
    await flooder.untilType("duet_presence");
    const junk = JSON.stringify({ type: "duet_typing", pad: "x".repeat(100) });
    const started = Date.now();
    for (let n = 0; n < 2000; n++) flooder.send(n % 2 === 0 ? junk : "not json");
    // Meanwhile the neighbour chats and runs a command.
    const said = post(`/api/rooms/${r}/message`, { text: "still here", userId: "ada" });
    const state = await calm.until((f) => f.type === "cf_agent_state" && f.state.messages.length >= 1);
    expect(state.state.messages[0].text).toBe("still here");
    const ran = await calm.rpc("x", "exec", [{ cmd: "echo calm" }]);
    expect(ran.success, JSON.stringify(ran)).toBe(true);
    expect(ran.result.result.stdout).toBe("calm\n");
    expect((await said).status).toBe(200);
    // The flooder was answered: most of its frames dropped, each said so.
    flooder.send({ type: "rpc", id: "end", method: "cancel", args: [] });
    let limited = 0;
    let last: Json;
    await flooder.until((f) => {
      if (f.type === "duet_error" && f.error === "rate limited") {
        limited++;
        last = f;
      }
      return f.type === "rpc" && f.id === "end";
    });
    // At most a burst (100) and what the rate refilled meanwhile (100 a
    // second, however slowly a loaded machine delivered them) got through.
    const refilled = Math.floor(((Date.now() - started) / 1000) * 100);
    expect(limited).toBeGreaterThanOrEqual(Math.max(1, 2000 - 100 - refilled));
    expect(last.retryAfterMs).toBeGreaterThan(0);
    expect(flooder.closed).toBe(false);
    // It stays open and is answered once it waits.
    await new Promise((ok) => setTimeout(ok, last.retryAfterMs + 50));
    const answer = await flooder.rpc("after", "cancel", []);
    expect(answer.result).toEqual({ cancelled: false });
    flooder.close();
    calm.close();
  });
});
