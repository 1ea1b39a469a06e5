// The shared terminal and idleness (DUET_SANDBOX_IDLE_SECS=2 and
// DUET_TERMINAL_IDLE_SECS=2 here): while it runs, the room's container does
// not sleep (its shell and variables stay); once nobody is attached and it
// has written nothing for the idle time, it ends for everyone (`exit` with a
// null exitCode) and the state says none runs.
import { describe, expect, it } from "vitest";
import { joined, room, sleep } from "../support";
import { attach } from "../terminal-support";

describe("an idle terminal", () => {
  it("keeps the container awake while it runs, and ends once unattached and silent", async () => {
    const r = room("ti");
    const ada = await joined(r, "user=ada&deltas=1");
    const a = await attach(ada, "o", 80, 24);
    a.type("kept=still-here\r");
    await a.shows("kept=still-here");
    // Well past the container's idle sleep: the terminal and its shell run on.
    await sleep(3_000);
    a.type('echo "$kept"-$((2*2))\r');
    await a.shows("still-here-4");
    ada.send({ type: "rpc", id: "d", method: "term_detach", args: [{ termId: a.termId }] });
    expect((await a.frame((f) => f.type === "rpc" && f.id === "d")).result).toEqual({ detached: true });
    const exit = await a.frame((f) => f.type === "duet_term" && f.phase === "exit");
    expect(exit).toEqual({ type: "duet_term", phase: "exit", termId: a.termId, exitCode: null });
    await a.frame((f) => f.type === "duet_state" && f.patch.terminal === null);
    ada.close();
  });
});
