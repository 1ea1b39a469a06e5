// The shared terminal's idle end (DUET_TERMINAL_IDLE_SECS=2 here): once
// nobody is attached and it has written nothing for that long, it ends for
// everyone (`exit` with a null exitCode) and the state says none runs.
import { describe, expect, it } from "vitest";
import { joined, room } from "../support";

describe("an unattached, silent terminal", () => {
  it("ends after the idle time", async () => {
    const r = room("ti");
    const ada = await joined(r, "user=ada&deltas=1");
    const opened = await ada.rpc("o", "term_open", [{}]);
    expect(opened.success, JSON.stringify(opened)).toBe(true);
    const { termId } = opened.result;
    expect((await ada.rpc("d", "term_detach", [{ termId }])).result).toEqual({ detached: true });
    const exit = await ada.until((f) => f.type === "duet_term" && f.phase === "exit");
    expect(exit).toEqual({ type: "duet_term", phase: "exit", termId, exitCode: null });
    await ada.until((f) => f.type === "duet_state" && f.patch.terminal === null);
    ada.close();
  });
});
