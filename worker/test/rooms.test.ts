// The room list (`GET /api/rooms`, docs/protocol.md): every room used,
// with its people now and its newest record's time, the most recently
// updated first; the server's token only (an invite 403, no token 401),
// GET only; a cleaned-up room stays listed.
import { describe, expect, it } from "vitest";
import { call, get, joined, post, room, sleep, type Json } from "./support";

interface Summary {
  roomId: string;
  people: number;
  updatedAt: number;
}

async function list(): Promise<Summary[]> {
  const res = await get("/api/rooms");
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(Object.keys(res.body)).toEqual(["rooms"]);
  return res.body.rooms as Summary[];
}

/** The summary of `r` in the list (undefined: not listed). */
async function summary(r: string): Promise<Summary | undefined> {
  return (await list()).find((s) => s.roomId === r);
}

/** Waits until the list shows `r` with `people`, for changes the room tells the list as sockets come and go. */
async function untilPeople(r: string, people: number): Promise<Summary> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const s = await summary(r);
    if (s?.people === people || Date.now() > deadline) {
      expect(s?.people, JSON.stringify(s)).toBe(people);
      return s as Summary;
    }
    await sleep(50);
  }
}

/** Says something to room `r`; the ts of the message stored. */
async function say(r: string, text: string): Promise<number> {
  const res = await post(`/api/rooms/${r}/message`, { text, to: "room", userId: "ann" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const messages = res.body.messages as Json[];
  return messages[messages.length - 1].ts as number;
}

describe("GET /api/rooms", () => {
  it("lists the rooms with the people in them now, the most recently updated first", async () => {
    const a = room("list-a");
    const b = room("list-b");
    const aTs = await say(a, "first");
    await sleep(5);
    const bTs = await say(b, "second");
    let rooms = await list();
    const at = (r: string) => rooms.findIndex((s) => s.roomId === r);
    expect(rooms[at(a)]).toEqual({ roomId: a, people: 0, updatedAt: aTs });
    expect(rooms[at(b)]).toEqual({ roomId: b, people: 0, updatedAt: bTs });
    expect(at(b)).toBeLessThan(at(a));
    for (let i = 1; i < rooms.length; i++) expect(rooms[i - 1].updatedAt).toBeGreaterThanOrEqual(rooms[i].updatedAt);

    // Two people, one of them on two sockets.
    const sockets = [await joined(b, "user=ann"), await joined(b, "user=bob"), await joined(b, "user=ann")];
    await untilPeople(b, 2);
    // Joining stores nothing: the order stays.
    expect((await summary(b))?.updatedAt).toBe(bTs);

    await sleep(5);
    const aLater = await say(a, "again");
    rooms = await list();
    expect(rooms[at(a)]).toEqual({ roomId: a, people: 0, updatedAt: aLater });
    expect(at(a)).toBeLessThan(at(b));

    sockets[1].close();
    await untilPeople(b, 1);
    sockets[0].close();
    sockets[2].close();
    await untilPeople(b, 0);
  });

  it("lists a room that only has an invite, from when it was first used", async () => {
    const r = room("list-inv");
    const before = Date.now();
    const made = await post(`/api/rooms/${r}/invites`, { role: "viewer" });
    expect(made.status).toBe(200);
    const s = await summary(r);
    expect(s?.people).toBe(0);
    expect(s?.updatedAt).toBeGreaterThanOrEqual(before);
    const first = s?.updatedAt;
    await sleep(5);
    expect((await post(`/api/rooms/${r}/invites`, { role: "writer" })).status).toBe(200);
    expect((await summary(r))?.updatedAt).toBe(first);
  });

  it("keeps a cleaned-up room, updated by its cleanup record", async () => {
    const r = room("list-clean");
    await say(r, "soon gone");
    const cleaned = await post(`/api/rooms/${r}/cleanup`, {});
    expect(cleaned.status).toBe(200);
    const page = await get(`/api/rooms/${r}/messages`);
    const records = page.body.messages as Json[];
    expect(records.map((m) => m.event?.kind)).toEqual(["cleanup"]);
    expect(await summary(r)).toEqual({ roomId: r, people: 0, updatedAt: records[0].ts });
  });

  it("refuses invites with 403 whatever their room and role, no token with 401, and any verb but GET with 405", async () => {
    const r = room("list-refused");
    for (const role of ["viewer", "writer", "owner"]) {
      const made = await post(`/api/rooms/${r}/invites`, { role });
      const res = await call("GET", "/api/rooms", undefined, { authorization: `Bearer ${made.body.token}` });
      expect([res.status, res.body]).toEqual([403, { error: "forbidden", details: { role: ["only the server's token may list rooms"] } }]);
    }
    expect((await call("GET", "/api/rooms", undefined, {})).status).toBe(401);
    expect((await call("GET", "/api/rooms", undefined, { authorization: "Bearer wrong" })).status).toBe(401);
    for (const method of ["POST", "PUT", "DELETE"]) {
      const res = await call(method, "/api/rooms", {});
      expect(res.status, method).toBe(405);
    }
  });
});
