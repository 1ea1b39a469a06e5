// A worker without DUET_TOKEN (local development): everyone is an owner,
// invites are refused with the contract's 409, and anyone lists the rooms.
import { describe, expect, it } from "vitest";
import { call, openSocket, room, type Json, type Ws } from "../support";

describe("without a token", () => {
  it("makes everyone an owner and refuses invites", async () => {
    const r = room("open");
    const res = await call("POST", `/api/rooms/${r}/invites`, { role: "viewer" }, {});
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: "invites need a token",
      details: {
        token: [
          "this server has no token, so everyone in it is an owner: start it with --token (or DUET_TOKEN) to invite people with roles",
        ],
      },
    });
    const opened = await openSocket(`/api/rooms/${r}/ws?_pk=me`, null);
    const s = opened.ws as Ws;
    const frames: Json[] = [await s.next(), await s.next(), await s.next(), await s.next()];
    expect(frames[3]).toEqual({ type: "duet_you", id: "me", name: "anonymous", role: "owner" });
    expect((await s.rpc(1, "invite_create", [{ role: "writer" }])).status).toBe(409);
    s.close();
  });

  it("lets anyone list the rooms", async () => {
    const r = room("open-list");
    expect((await call("POST", `/api/rooms/${r}/message`, { text: "hi", to: "room" }, {})).status).toBe(200);
    const res = await call("GET", "/api/rooms", undefined, {});
    expect(res.status).toBe(200);
    expect((res.body.rooms as Json[]).map((s) => s.roomId)).toContain(r);
  });
});
