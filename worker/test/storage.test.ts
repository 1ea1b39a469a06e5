// The room's storage: one SQLite row per message and per command in its
// Durable Object, and the same state frame, byte for byte, after the object
// is evicted (tests/it/neutral/server_persist.rs); hibernated sockets keep their place.
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { SERVER_STOPPED } from "../src/protocol";
import { get, joined, post, room, sleep, ws } from "./support";

const testEnv = env as unknown as Env;

describe("storage", () => {
  it("keeps one row per message and per command, and the state byte for byte across an eviction", async () => {
    const r = room("keep");
    for (const n of [0, 1, 2]) {
      expect((await post(`/api/rooms/${r}/message`, { text: `note ${n} ✓`, userId: "ada" })).status).toBe(200);
    }
    expect((await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo persisted" })).status).toBe(200);
    const ada = await ws(r, "user=ada&_pk=a");
    await ada.next();
    const before = await ada.nextText();
    expect(JSON.parse(before).state.execs[0].stdout).toBe("persisted\n");
    await ada.next();
    const pageBefore = (await get(`/api/rooms/${r}/messages`)).body;

    const stub = testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));
    const rows = await runInDurableObject(stub, (_instance, state) => ({
      messages: state.storage.sql.exec("SELECT id, role, text FROM duet_messages ORDER BY id").toArray(),
      execs: state.storage.sql.exec("SELECT exec_id, stdout FROM duet_execs").toArray(),
    }));
    expect(rows.messages.length).toBe(6);
    expect(rows.messages[0]).toEqual({ id: "000000000001", role: "user", text: "note 0 ✓" });
    expect(rows.execs).toEqual([{ exec_id: "x00000000001", stdout: "persisted\n" }]);

    await evictDurableObject(stub);
    const bob = await ws(r, "user=bob&_pk=b");
    await bob.next();
    expect(await bob.nextText()).toBe(before);
    // The hibernated socket is still in the room, before the newcomer.
    const presence = await bob.next();
    expect(presence.users.map((u: { id: string }) => u.id)).toEqual(["a", "b"]);
    expect((await ada.untilType("duet_presence")).users.length).toBe(2);
    expect((await get(`/api/rooms/${r}/messages`)).body).toEqual(pageBefore);
    // Ids go on from where they were.
    const later = await post(`/api/rooms/${r}/message`, { text: "later" });
    expect(later.body.messages[6].id).toBe("000000000007");
    expect((await ada.untilType("cf_agent_state")).state.messages.length).toBe(7);
  });

  it("adds the new columns to an older room's table, keeping its rows and its unanswered question", async () => {
    const r = room("old");
    const stub = testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));
    const columns = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      // The table as rooms stored it before records and room messages.
      sql.exec(`CREATE TABLE duet_messages (id TEXT PRIMARY KEY, role TEXT NOT NULL, user_id TEXT, text TEXT NOT NULL,
                ts INTEGER NOT NULL, runs TEXT, client_id TEXT, answer TEXT)`);
      sql.exec("INSERT INTO duet_messages (id, role, user_id, text, ts) VALUES ('000000000001', 'user', 'ada', 'from before', 1)");
      sql.exec("CREATE TABLE duet_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)");
      sql.exec("INSERT INTO duet_counters (name, value) VALUES ('message', 2)");
      return sql.exec("PRAGMA table_info(duet_messages)").toArray().map((c) => String(c.name));
    });
    expect(columns).not.toContain("event");
    await evictDurableObject(stub);
    const messages = (await get(`/api/rooms/${r}/messages`)).body.messages;
    // The old question had no answer: the room says so, as it always did.
    expect(messages.map((m: { id: string; text: string; to?: string }) => [m.id, m.text, m.to])).toEqual([
      ["000000000001", "from before", undefined],
      ["000000000002", messages[1].text, undefined],
    ]);
    const said = await post(`/api/rooms/${r}/message`, { text: "hi", userId: "bob", to: "room" });
    expect(said.body.messages[2]).toMatchObject({ id: "000000000003", to: "room" });
  });

  it("keeps the room in its own tables, never in the SDK's state", async () => {
    const r = room("row");
    const text = `marker-${"x".repeat(7000)}`;
    await post(`/api/rooms/${r}/message`, { text });
    const stub = testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));
    const holders = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const tables = sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray();
      return tables
        .map(({ name }) => String(name))
        .filter((name) => !name.startsWith("_cf") && !name.startsWith("sqlite_"))
        .filter((name) => JSON.stringify(sql.exec(`SELECT * FROM "${name}"`).toArray()).includes("marker-"));
    });
    expect(holders).toEqual(["duet_messages"]);
  });

  it("keeps a command a restart cut off, with what it printed, no exit code and why (tests/it/server/crash_recovery.rs)", async () => {
    const r = room("cut");
    const ticks = "for i in $(seq 1 20); do echo tick $i; sleep 1; done";
    const stub = testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));
    const s = await joined(r, "user=ada");
    const running = post(`/api/rooms/${r}/sandbox/exec`, { cmd: ticks });
    let printed = "";
    while (!printed.includes("tick 3\n")) {
      printed += (await s.until((f) => f.type === "duet_exec" && f.phase === "stdout")).data;
    }
    // Its row is written as it starts and its output as it streams, in batches.
    const row = () =>
      runInDurableObject(stub, (_i, state) => state.storage.sql.exec("SELECT * FROM duet_execs").toArray()[0]);
    while (!String((await row())?.stdout ?? "").includes("tick 3\n")) await sleep(100);
    const left = await row();
    expect(left?.ended).toBe(0);
    // Not a record while it runs.
    expect((await get(`/api/rooms/${r}/execs`)).body.execs).toEqual([]);
    expect((await post(`/api/rooms/${r}/sandbox/interrupt`, {})).body).toEqual({ interrupted: true });
    expect((await running).status).toBe(200);
    s.close();
    // A restart under it leaves the row as it was while it ran (local
    // workerd cannot reset an object mid-request reliably): the object's
    // next start ends it.
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(
        "INSERT INTO duet_execs (exec_id, cmd, by_name, source, stdout, stderr, exit_code, duration, ts, truncated, ended) VALUES ('x00000000002', ?, 'ada', 'user', ?, '', NULL, ?, ?, 0, 0)",
        ticks,
        String(left?.stdout),
        Number(left?.duration),
        Number(left?.ts),
      );
      state.storage.sql.exec("UPDATE duet_counters SET value = 3 WHERE name = 'exec'");
    });
    await evictDurableObject(stub);
    const execs = (await get(`/api/rooms/${r}/execs`)).body.execs;
    expect(execs.map((e: any) => e.execId), JSON.stringify(execs)).toEqual(["x00000000001", "x00000000002"]);
    const cut = execs[1];
    expect(cut.stdout.startsWith("tick 1\ntick 2\ntick 3\n"), cut.stdout).toBe(true);
    expect(cut.stdout).not.toContain("tick 20");
    expect([cut.cmd, cut.exitCode, cut.error]).toEqual([ticks, null, SERVER_STOPPED]);
    // Who joins after sees it ended, in the state.
    const bob = await ws(r, "user=bob");
    await bob.next();
    expect((await bob.next()).state.execs).toEqual(execs);
    bob.close();
  });
});
