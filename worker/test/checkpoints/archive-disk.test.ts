// A push within the room's disk (DUET_DISK_MB=1): one that does not fit is
// the 507 and writes nothing (its scratch gone too); one that fits but
// whose checkpoint would not stands, with `checkpoint: null` in its answer
// and its record.
import { describe, expect, it } from "vitest";
import { call, get, room } from "../support";
import { tarOf } from "../tars";

const push = (r: string, body: Uint8Array) => call("PUT", `/api/rooms/${r}/archive/?userId=ann`, body);

async function listing(r: string): Promise<string[]> {
  const res = await get(`/api/rooms/${r}/files/`);
  expect(res.status).toBe(200);
  return res.body.entries.map((e: { name: string }) => e.name);
}

describe("a push and the room's disk", () => {
  it("answers 507 when its files do not fit, and writes nothing", async () => {
    const r = room("push-full");
    expect((await call("PUT", `/api/rooms/${r}/files/kept.txt`, "kept")).status).toBe(200);
    const tar = tarOf([
      { name: "small.txt", data: "x" },
      { name: "big.bin", data: new Uint8Array(1_100_000) },
    ]);
    const res = await push(r, tar);
    expect([res.status, res.body]).toEqual([507, { error: "the room's disk is full" }]);
    expect(await listing(r)).toEqual(["kept.txt"]);
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
  });

  it("stands when its checkpoint does not fit: `checkpoint: null`, in the record too", async () => {
    const r = room("push-nock");
    const res = await push(r, tarOf([{ name: "d/half.bin", data: new Uint8Array(700_000) }]));
    expect([res.status, res.body]).toEqual([200, { files: 1, bytes: 700_000, deleted: 0, checkpoint: null }]);
    expect(await listing(r)).toEqual(["d"]);
    const records = (await get(`/api/rooms/${r}/messages`)).body.messages.filter((m: { event?: { kind: string } }) => m.event?.kind === "push");
    expect(records.map((m: { event: object; text: string }) => [m.event, m.text])).toEqual([
      [{ kind: "push", by: "ann", path: "", files: 1, bytes: 700_000, deleted: 0, checkpointId: null }, "ann pushed 1 file (683.6 KiB) into /workspace"],
    ]);
  });
});
