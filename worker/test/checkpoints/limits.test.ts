// DUET_AUTO_CHECKPOINTS=2, DUET_DISK_MB=1, DUET_CHECKPOINT_TTL_SECS=3: only
// the last two automatic checkpoints stay, a checkpoint that would not fit
// the room's disk is refused before anything is copied (an automatic one is
// skipped, the turn runs on), and a checkpoint leaves the list when it
// expires (`expiresAt`), its objects deleted.
import { describe, expect, it } from "vitest";
import { call, get, post, room, script, sleep } from "../support";

const exec = (r: string, cmd: string) => post(`/api/rooms/${r}/sandbox/exec`, { cmd });

describe("checkpoint limits", () => {
  it("keeps the last two automatic checkpoints, and a person's stays", async () => {
    const r = room("keep");
    await call("PUT", `/api/rooms/${r}/files/f`, "x");
    await post(`/api/rooms/${r}/checkpoints`, { name: "mine" });
    for (let i = 0; i < 3; i++) {
      const key = await script(`${r}-${i}`, [{ kind: "whole", text: `<run>echo ${i} >> f</run>` }]);
      expect((await post(`/api/rooms/${r}/message`, { text: `turn ${key}` })).status).toBe(200);
    }
    const list = (await get(`/api/rooms/${r}/checkpoints`)).body.checkpoints;
    expect(list.map((c: { id: string; name: string }) => [c.id, c.name])).toEqual([
      ["c1", "mine"],
      ["c3", "auto-3"],
      ["c4", "auto-4"],
    ]);
  });

  it("refuses a checkpoint that does not fit the disk, and skips an automatic one", async () => {
    const r = room("full");
    expect((await exec(r, "head -c 700000 /dev/zero > big")).status).toBe(200);
    const refused = await post(`/api/rooms/${r}/checkpoints`, { name: "big" });
    expect(refused.status).toBe(507);
    expect(refused.body).toEqual({
      error: "the room's disk is full",
      details: { checkpoint: [`it needs 700000 bytes; ${1048576 - 700000} are free`] },
    });
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
    const key = await script(r, [{ kind: "whole", text: "<run>rm big</run>" }]);
    const turn = await post(`/api/rooms/${r}/message`, { text: `free it ${key}` });
    expect(turn.body.reply).toBe("Output (rm big):\n[no output]");
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
  });

  it("drops a checkpoint from the list when it expires", async () => {
    const r = room("ttl");
    await call("PUT", `/api/rooms/${r}/files/f`, "x");
    const made = (await post(`/api/rooms/${r}/checkpoints`, {})).body.checkpoint;
    expect(made.expiresAt).toBe(made.ts + 3000);
    while (Date.now() < made.expiresAt + 100) await sleep(200);
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
    expect((await post(`/api/rooms/${r}/checkpoints/${made.id}/restore`, {})).status).toBe(404);
  });
});
