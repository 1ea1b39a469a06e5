// GET /api/rooms/{room}/execs?before&limit: every command since the last
// cleanup, people's and the agent's, paged as /messages is, while the
// state keeps its last 20 (docs/protocol.md "HTTP").
import { describe, expect, it } from "vitest";
import { chunked, get, post, room, script, ws, type Json } from "./support";

const execs = (r: string, query = "") => get(`/api/rooms/${r}/execs${query}`);

describe("GET /execs", () => {
  it("pages through all the room's commands, oldest first", async () => {
    const r = room("ex");
    for (let i = 1; i <= 24; i++) {
      const { status } = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: `echo ${i}`, userId: "ada" });
      expect(status).toBe(200);
    }
    const key = await script(r, [chunked("<run>echo 25</run>", 4)]);
    expect((await post(`/api/rooms/${r}/message`, { text: `one more ${key}`, userId: "ada" })).status).toBe(200);
    const all = await execs(r);
    expect(all.status).toBe(200);
    expect(Object.keys(all.body)).toEqual(["execs", "hasMore"]);
    expect(all.body.hasMore).toBe(false);
    expect(all.body.execs.map((x: Json) => x.stdout)).toEqual(Array.from({ length: 25 }, (_, i) => `${i + 1}\n`));
    expect(all.body.execs[0]).toMatchObject({ cmd: "echo 1", by: "ada", source: "user", exitCode: 0 });
    expect(all.body.execs[24]).toMatchObject({ cmd: "echo 25", by: "agent", source: "agent" });
    // The state holds the last 20, the same records.
    const s = await ws(r);
    await s.next();
    expect((await s.next()).state.execs).toEqual(all.body.execs.slice(5));
    s.close();
    const last = await execs(r, "?limit=10");
    expect(last.body).toEqual({ execs: all.body.execs.slice(15), hasMore: true });
    const before = await execs(r, `?limit=10&before=${last.body.execs[0].execId}`);
    expect(before.body).toEqual({ execs: all.body.execs.slice(5, 15), hasMore: true });
    const first = await execs(r, `?before=${before.body.execs[0].execId}`);
    expect(first.body).toEqual({ execs: all.body.execs.slice(0, 5), hasMore: false });
    expect((await execs(r, `?before=${all.body.execs[0].execId}`)).body).toEqual({ execs: [], hasMore: false });
    // A cleanup empties it.
    expect((await post(`/api/rooms/${r}/cleanup`, { userId: "ada" })).status).toBe(200);
    expect((await execs(r)).body).toEqual({ execs: [], hasMore: false });
  });

  it("answers 400 with details for a bad before or limit", async () => {
    const r = room("ex");
    for (const [query, field] of [
      ["?limit=0", "limit"],
      ["?limit=101", "limit"],
      ["?limit=ten", "limit"],
      ["?before=nope", "before"],
      ["?before=", "before"],
    ]) {
      const { status, body } = await execs(r, query);
      expect(status, query).toBe(400);
      expect(body.error).toBe("invalid request");
      expect(Object.keys(body.details), query).toEqual([field]);
    }
    const both = await execs(r, "?before=x&limit=500");
    expect(both.body.details).toEqual({ before: ["must be a command id"], limit: ["must be a whole number from 1 to 100"] });
    expect((await execs("bad room!")).status).toBe(400);
    expect((await post(`/api/rooms/${r}/execs`, {})).status).toBe(405);
    expect(await execs(r)).toMatchObject({ status: 200, body: { execs: [], hasMore: false } });
  });
});
