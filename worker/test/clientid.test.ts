// `clientId` makes a message safe to repeat (docs/protocol.md, POST /message;
// issue 10, item 3), and a turn that a restart cut off gets a `system`
// message saying so, once ("The agent's turn"; tests/it/server/crash_recovery.rs).
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { CUT_OFF_TEXT } from "../src/room";
import { get, joined, post, room, script } from "./support";

const testEnv = env as unknown as Env;
const stub = (r: string) => testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));

async function rows(r: string): Promise<any[]> {
  return runInDurableObject(stub(r), (_i, state) =>
    state.storage.sql.exec("SELECT id, role, client_id, text FROM duet_messages ORDER BY id").toArray(),
  );
}

describe("clientId", () => {
  it("stores a message once and answers a repeat as the first request, over HTTP and rpc", async () => {
    const r = room("cid");
    const key = await script(r, [{ kind: "stream", pieces: ["Hello."] }]);
    const first = await post(`/api/rooms/${r}/message`, { text: `hi ${key}`, userId: "ada", clientId: "c-1" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.reply).toBe("Hello.");
    expect(Object.keys(first.body.messages[0])).toEqual(["id", "role", "userId", "text", "ts", "clientId", "to"]);
    expect(first.body.messages[0].clientId).toBe("c-1");
    expect(first.body.messages[1].clientId).toBeUndefined();
    const again = await post(`/api/rooms/${r}/message`, { text: `hi ${key}`, userId: "ada", clientId: "c-1" });
    expect(again).toMatchObject({ status: 200, body: first.body });
    const s = await joined(r, "user=bob");
    const viaRpc = await s.rpc("m1", "message", [{ text: "different text, same id", clientId: "c-1" }]);
    expect(viaRpc.result).toEqual(first.body);
    expect((await rows(r)).length).toBe(2);
    // The same id in another room is another message.
    const other = await post(`/api/rooms/${room("cid")}/message`, { text: "hi", clientId: "c-1" });
    expect(other.body.messages[0].clientId).toBe("c-1");
    s.close();
  });

  it("waits for the first request's turn when it still runs", async () => {
    const r = room("cid");
    const key = await script(r, [{ kind: "hang", pieces: ["thinking"] }]);
    const s = await joined(r, "user=bob");
    const first = post(`/api/rooms/${r}/message`, { text: `hang ${key}`, clientId: "c-run" });
    await s.until((f) => f.type === "duet_ai" && f.phase === "start");
    const again = post(`/api/rooms/${r}/message`, { text: `hang ${key}`, clientId: "c-run" });
    const viaRpc = s.rpc("m", "message", [{ text: "x", clientId: "c-run" }]);
    expect((await post(`/api/rooms/${r}/cancel`, {})).body).toEqual({ cancelled: true });
    const [a, b, c] = await Promise.all([first, again, viaRpc]);
    expect(a.body.reply).toBeNull();
    expect(a.body.error).toBe("the agent's turn was cancelled");
    expect(b.body).toEqual(a.body);
    expect(c.result).toEqual(a.body);
    // The cancelled turn's (empty) reply, then the record of who cancelled it.
    expect((await rows(r)).map((m) => m.role)).toEqual(["user", "agent", "system"]);
    s.close();
  });

  it("refuses a clientId that is not 1-64 printable characters", async () => {
    const r = room("cid");
    for (const clientId of ["", "x".repeat(65), "a\nb", 5, ["c"]]) {
      const res = await post(`/api/rooms/${r}/message`, { text: "hi", clientId });
      expect(res.status, JSON.stringify(clientId)).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(["clientId"]);
    }
    expect((await post(`/api/rooms/${r}/message`, { text: "hi", clientId: "é".repeat(64) })).status).toBe(200);
    const s = await joined(r);
    const bad = await s.rpc("b", "message", [{ text: "hi", clientId: "" }]);
    expect([bad.success, bad.status, Object.keys(bad.details)]).toEqual([false, 400, ["clientId"]]);
    expect((await rows(r)).length).toBe(2);
    s.close();
  });
});

describe("a turn cut off by a restart", () => {
  /** A room whose object stopped after storing a question (with `clientId`) and before answering it. */
  async function cutOff(r: string, clientId?: string): Promise<void> {
    expect((await post(`/api/rooms/${r}/message`, { text: "earlier" })).status).toBe(200);
    await runInDurableObject(stub(r), (_i, state) => {
      state.storage.sql.exec(
        "INSERT INTO duet_messages (id, role, user_id, client_id, text, ts) VALUES ('000000000003', 'user', 'ada', ?, 'unanswered?', 1)",
        clientId ?? null,
      );
      state.storage.sql.exec("UPDATE duet_counters SET value = 4 WHERE name = 'message'");
    });
    await evictDurableObject(stub(r));
  }

  it("is found past the room messages and records that came after the question", async () => {
    const r = room("cut");
    expect((await post(`/api/rooms/${r}/message`, { text: "earlier" })).status).toBe(200);
    await runInDurableObject(stub(r), (_i, state) => {
      const sql = state.storage.sql;
      sql.exec("INSERT INTO duet_messages (id, role, user_id, text, ts, addressee) VALUES ('000000000003', 'user', 'ada', 'unanswered?', 1, 'agent')");
      sql.exec("INSERT INTO duet_messages (id, role, user_id, text, ts, addressee) VALUES ('000000000004', 'user', 'bob', 'brb', 2, 'room')");
      sql.exec(
        "INSERT INTO duet_messages (id, role, user_id, text, ts, event) VALUES ('000000000005', 'system', 'bob', 'bob uploaded a (1 byte)', 3, ?)",
        JSON.stringify({ kind: "upload", by: "bob", path: "a", size: 1 }),
      );
      sql.exec("UPDATE duet_counters SET value = 6 WHERE name = 'message'");
    });
    await evictDurableObject(stub(r));
    const page = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(page.slice(2).map((m: any) => [m.role, m.userId, m.text])).toEqual([
      ["user", "ada", "unanswered?"],
      ["user", "bob", "brb"],
      ["system", "bob", "bob uploaded a (1 byte)"],
      ["system", "ada", CUT_OFF_TEXT],
    ]);
  });

  it("gets one system message saying so when the room is next used", async () => {
    const r = room("cut");
    await cutOff(r);
    const s = await joined(r, "user=bob");
    const page = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(page.map((m: any) => [m.role, m.text])).toEqual([
      ["user", "earlier"],
      ["system", expect.any(String)],
      ["user", "unanswered?"],
      ["system", CUT_OFF_TEXT],
    ]);
    expect(page[3].userId).toBe("ada");
    expect(CUT_OFF_TEXT).toContain("restarted before the agent answered");
    // Once: another start of the object adds nothing.
    await evictDurableObject(stub(r));
    expect((await get(`/api/rooms/${r}/messages`)).body.messages.length).toBe(4);
    s.close();
  });

  it("answers a repeat of its clientId {reply:null, error, messages}, storing nothing", async () => {
    const r = room("cut");
    await cutOff(r, "c-lost");
    const again = await post(`/api/rooms/${r}/message`, { text: "unanswered?", clientId: "c-lost" });
    expect(again.status).toBe(200);
    expect(Object.keys(again.body)).toEqual(["reply", "error", "messages"]);
    expect(again.body.reply).toBeNull();
    expect(again.body.error).toBe(CUT_OFF_TEXT);
    expect(again.body.messages.length).toBe(4);
    expect(again.body.messages[2].clientId).toBe("c-lost");
    expect((await rows(r)).length).toBe(4);
  });

  it("keeps an answered clientId's answer across an eviction", async () => {
    const r = room("cut");
    const key = await script(r, [{ kind: "stream", pieces: ["Kept."] }]);
    const first = await post(`/api/rooms/${r}/message`, { text: `hi ${key}`, clientId: "c-keep" });
    await evictDurableObject(stub(r));
    const again = await post(`/api/rooms/${r}/message`, { text: `hi ${key}`, clientId: "c-keep" });
    expect(again.body).toEqual(first.body);
  });
});
