// Invites and roles on the worker (docs/protocol.md "Invites, roles and
// approvals"): invite tokens made, listed, hashed in the room's storage,
// used on their room only, revoked and expired (sockets closed with
// 4401); `duet_you` and presence roles; a role change seen live; names an
// invite fixes; and the table of who may do what over HTTP, rpc and
// terminal frames.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { ORIGIN, call, get, openSocket, post, room, type Json, type Ws } from "./support";

const testEnv = env as unknown as Env;

/** A request with `token` as its bearer. */
function as(token: string, method: string, path: string, body?: Json) {
  return call(method, path, body, { authorization: `Bearer ${token}` });
}

/** Makes an invite of `r` with the server's token; its answer. */
async function invite(r: string, body: Json): Promise<Json> {
  const res = await post(`/api/rooms/${r}/invites`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** A socket of `r` with `token`, its connect frames read; the frames. */
async function join(r: string, token: string, query = ""): Promise<{ ws: Ws; connect: Json[] }> {
  const opened = await openSocket(`/api/rooms/${r}/ws?${query}`, token);
  expect(opened.status, opened.body).toBe(101);
  const ws = opened.ws as Ws;
  const connect = [await ws.next(), await ws.next(), await ws.next(), await ws.next()];
  return { ws, connect };
}

const FORBIDDEN_VIEWER = (what: string) => ({ error: "forbidden", details: { role: [`a viewer may not ${what}`] } });

describe("invites", () => {
  it("makes an invite whose token is shown once, kept only as its SHA-256, and listed without it", async () => {
    const r = room("inv");
    const made = await invite(r, { role: "viewer", name: "Vic", expiresIn: 600, userId: "ann" });
    expect(made.token).toMatch(/^duet_inv_[0-9a-f]{40}$/);
    expect(made.url).toBe(`http://${made.token}@${new URL(ORIGIN).host}/${r}`);
    expect(Object.keys(made.invite)).toEqual(["id", "role", "name", "expiresAt", "createdAt", "by"]);
    expect(made.invite).toMatchObject({ id: "i1", role: "viewer", name: "Vic", by: "ann" });
    expect(made.invite.expiresAt - made.invite.createdAt).toBe(600_000);
    const second = await invite(r, { role: "writer" });
    expect(second.invite.id).toBe("i2");
    expect(second.invite.expiresAt - second.invite.createdAt).toBe(86_400_000);
    const list = await get(`/api/rooms/${r}/invites`);
    expect(list.body).toEqual({ invites: [made.invite, second.invite] });
    expect(JSON.stringify(list.body)).not.toContain("duet_inv_");
    // The room's storage holds the hash, never the token.
    const stub = testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));
    const rows = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec("SELECT * FROM duet_invites").toArray());
    expect(JSON.stringify(rows)).not.toContain(made.token);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(made.token)));
    const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    expect(rows.map((row) => row.hash)).toContain(hex);
  });

  it("refuses bad bodies field by field", async () => {
    const r = room("inv");
    const bad = await post(`/api/rooms/${r}/invites`, { role: "boss", expiresIn: 0, name: "" });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual({
      expiresIn: ["must be a whole number of seconds from 1 to 31536000"],
      name: ["must not be empty"],
      role: ["must be owner, writer or viewer"],
    });
    expect((await post(`/api/rooms/${r}/invites`, {})).body.details).toEqual({ role: ["is required"] });
    const unknown = await call("DELETE", `/api/rooms/${r}/invites/i9`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: "no such invite", details: { inviteId: ['no invite "i9" in this room'] } });
  });

  it("works in its own room only", async () => {
    const r = room("inv");
    const other = room("inv");
    const { token } = await invite(r, { role: "writer" });
    expect((await as(token, "GET", `/api/rooms/${r}/messages`)).status).toBe(200);
    const elsewhere = await as(token, "GET", `/api/rooms/${other}/messages`);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body).toEqual({ error: "unauthorized" });
    expect((await openSocket(`/api/rooms/${other}/ws`, token)).status).toBe(401);
    expect((await as(`duet_inv_${"0".repeat(40)}`, "GET", `/api/rooms/${r}/messages`)).status).toBe(401);
  });

  it("says who a socket is: duet_you after presence, roles in presence, a fixed name", async () => {
    const r = room("you");
    const { token, invite: inv } = await invite(r, { role: "viewer", name: "Vic" });
    const owner = await join(r, "test-token", "user=ann&_pk=ann1");
    expect(owner.connect.map((f) => f.type)).toEqual(["cf_agent_identity", "cf_agent_state", "duet_presence", "duet_you"]);
    expect(owner.connect[3]).toEqual({ type: "duet_you", id: "ann1", name: "ann", role: "owner" });
    expect(owner.connect[1].state).toMatchObject({ policy: "auto", approvals: [], allow: ["ls", "cat"] });
    // The query's name gives way to the invite's.
    const viewer = await join(r, token, "user=mallory&_pk=vic1");
    expect(viewer.connect[3]).toEqual({ type: "duet_you", id: "vic1", name: "Vic", role: "viewer", inviteId: inv.id });
    expect(viewer.connect[2].users).toEqual([
      { id: "ann1", name: "ann", since: expect.any(Number), role: "owner" },
      { id: "vic1", name: "Vic", since: expect.any(Number), role: "viewer" },
    ]);
    const said = await viewer.ws.rpc(1, "message", [{ text: "hello", to: "room", userId: "mallory" }]);
    expect(said.success).toBe(true);
    expect(said.result.messages.at(-1)).toMatchObject({ userId: "Vic", text: "hello", to: "room" });
    const renamed = await viewer.ws.rpc(2, "rename", [{ name: "mallory" }]);
    expect(renamed).toMatchObject({ success: false, status: 403, error: "forbidden" });
    expect(Object.keys(renamed.details)).toEqual(["name"]);
    // Over HTTP too, the invite's name is the record's.
    const writer = await invite(r, { role: "writer", name: "Wes" });
    const put = await call("PUT", `/api/rooms/${r}/files/w.txt?userId=mallory`, "x", { authorization: `Bearer ${writer.token}` });
    expect(put.status).toBe(200);
    const records = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(records.at(-1).event).toEqual({ kind: "upload", by: "Wes", path: "w.txt", size: 1 });
    owner.ws.close();
    viewer.ws.close();
  });

  it("changes a role live: duet_you to the person, presence to everyone, and what they may do", async () => {
    const r = room("role");
    const { token, invite: inv } = await invite(r, { role: "viewer" });
    const owner = await join(r, "test-token", "user=ann&_pk=ann1");
    const person = await join(r, token, "user=bob&_pk=bob1");
    expect((await person.ws.rpc(1, "exec", [{ cmd: "true" }])).status).toBe(403);
    const changed = await owner.ws.rpc(2, "set_role", [{ inviteId: inv.id, role: "writer" }]);
    expect(changed.result.invite).toMatchObject({ id: inv.id, role: "writer" });
    expect(await person.ws.untilType("duet_you")).toEqual({ type: "duet_you", id: "bob1", name: "bob", role: "writer", inviteId: inv.id });
    // Everyone's presence says so (the owner's went by before its answer).
    const presence = await person.ws.untilType("duet_presence");
    expect(presence.users.map((u: Json) => [u.id, u.role])).toEqual([
      ["ann1", "owner"],
      ["bob1", "writer"],
    ]);
    const ran = await person.ws.rpc(3, "exec", [{ cmd: "echo now" }]);
    expect(ran.success).toBe(true);
    expect(ran.result.result.stdout).toBe("now\n");
    // Over HTTP too; and not a role an owner did not give.
    expect((await as(token, "POST", `/api/rooms/${r}/invites/${inv.id}/role`, { role: "viewer" })).status).toBe(403);
    const back = await post(`/api/rooms/${r}/invites/${inv.id}/role`, { role: "viewer" });
    expect(back.body.invite.role).toBe("viewer");
    expect((await person.ws.untilType("duet_you")).role).toBe("viewer");
    expect((await as(token, "POST", `/api/rooms/${r}/sandbox/exec`, { cmd: "true" })).status).toBe(403);
    owner.ws.close();
    person.ws.close();
  });

  it("revokes: the token answers 401 and its sockets close with 4401", async () => {
    const r = room("rev");
    const { token, invite: inv } = await invite(r, { role: "writer" });
    const owner = await join(r, "test-token", "_pk=own");
    const person = await join(r, token, "_pk=gone");
    const revoked = await owner.ws.rpc(1, "invite_revoke", [{ inviteId: inv.id }]);
    expect(revoked.result).toEqual({ revoked: true });
    expect(await person.ws.closedWith()).toEqual({ code: 4401, reason: "the invite was revoked" });
    const presence = await owner.ws.until((f) => f.type === "duet_presence" && f.users.length === 1);
    expect(presence.users[0].id).toBe("own");
    expect((await as(token, "GET", `/api/rooms/${r}/messages`)).status).toBe(401);
    expect((await openSocket(`/api/rooms/${r}/ws`, token)).status).toBe(401);
    expect((await get(`/api/rooms/${r}/invites`)).body.invites).toEqual([]);
    expect((await call("DELETE", `/api/rooms/${r}/invites/${inv.id}`)).status).toBe(404);
    owner.ws.close();
  });

  it("expires: its sockets close with 4401 at the moment, and the token answers 401", async () => {
    const r = room("exp");
    const { token } = await invite(r, { role: "viewer", expiresIn: 1 });
    const person = await join(r, token);
    expect(await person.ws.closedWith()).toEqual({ code: 4401, reason: "the invite expired" });
    expect((await as(token, "GET", `/api/rooms/${r}/messages`)).status).toBe(401);
    expect((await get(`/api/rooms/${r}/invites`)).body.invites).toEqual([]);
  });
});

describe("who may do what", () => {
  it("answers a viewer's every forbidden HTTP call 403, before anything is done, and lets it read and chat", async () => {
    const r = room("view");
    const { token } = await invite(r, { role: "viewer" });
    await post(`/api/rooms/${r}/checkpoints`, { name: "keep" });
    const refused: [string, string, Json, string][] = [
      ["POST", "message", { text: "hi agent" }, "ask the agent"],
      ["POST", "sandbox/exec", { cmd: "touch /workspace/nope" }, "run commands"],
      ["POST", "sandbox/interrupt", {}, "interrupt commands"],
      ["POST", "cancel", {}, "cancel the agent's turn"],
      ["POST", "cleanup", {}, "clean the room up"],
      ["POST", "processes", { cmd: "sleep 100" }, "start background processes"],
      ["DELETE", "processes/p1", undefined, "stop background processes"],
      ["POST", "checkpoints", {}, "take checkpoints"],
      ["POST", "checkpoints/c1/restore", {}, "restore checkpoints"],
      ["DELETE", "checkpoints/c1", undefined, "delete checkpoints"],
      ["POST", "fork", { to: room("fork") }, "fork the room"],
      ["POST", "policy", { policy: "off" }, "change the policy"],
      ["POST", "approve", { approvalId: "a1", approved: true }, "answer approvals"],
      ["POST", "invites", { role: "owner" }, "manage invites"],
      ["GET", "invites", undefined, "manage invites"],
      ["DELETE", "invites/i1", undefined, "manage invites"],
      ["POST", "invites/i1/role", { role: "owner" }, "change roles"],
      ["POST", "model", { model: "x" }, "choose the model"],
      ["PUT", "files/nope.txt", "bytes", "change files"],
      ["DELETE", "files/nope.txt", undefined, "change files"],
    ];
    for (const [method, path, body, what] of refused) {
      const res = await as(token, method, `/api/rooms/${r}/${path}`, body);
      expect([path, res.status, res.body]).toEqual([path, 403, FORBIDDEN_VIEWER(what)]);
    }
    // A bad body is a 400 first.
    expect((await as(token, "POST", `/api/rooms/${r}/sandbox/exec`, {})).status).toBe(400);
    // Nothing was done.
    expect((await get(`/api/rooms/${r}/files/nope`)).status).toBe(404);
    expect((await get(`/api/rooms/${r}/checkpoints`)).body.checkpoints.length).toBe(1);
    for (const path of ["messages", "processes", "ports", "checkpoints", "files/"]) {
      expect([path, (await as(token, "GET", `/api/rooms/${r}/${path}`)).status]).toEqual([path, 200]);
    }
    const chat = await as(token, "POST", `/api/rooms/${r}/message`, { text: "hello room", to: "room" });
    expect(chat.status).toBe(200);
    expect(chat.body.reply).toBeNull();
  });

  it("answers a viewer's forbidden rpc 403 and its terminal frames with duet_error, and lets it watch", async () => {
    const r = room("view");
    const { token } = await invite(r, { role: "viewer" });
    const viewer = await join(r, token, "_pk=v");
    const refused: [string, Json, string][] = [
      ["message", { text: "agent, hi" }, "ask the agent"],
      ["exec", { cmd: "true" }, "run commands"],
      ["interrupt", {}, "interrupt commands"],
      ["cancel", {}, "cancel the agent's turn"],
      ["cleanup", {}, "clean the room up"],
      ["process_start", { cmd: "sleep 9" }, "start background processes"],
      ["process_kill", { processId: "p1" }, "stop background processes"],
      ["term_open", {}, "open the terminal"],
      ["term_close", { termId: "t1" }, "close the terminal"],
      ["checkpoint_create", {}, "take checkpoints"],
      ["checkpoint_restore", { checkpointId: "c1" }, "restore checkpoints"],
      ["checkpoint_delete", { checkpointId: "c1" }, "delete checkpoints"],
      ["fork", { to: room("fork") }, "fork the room"],
      ["set_policy", { policy: "ask" }, "change the policy"],
      ["approve", { approvalId: "a1", approved: false }, "answer approvals"],
      ["invite_create", { role: "writer" }, "manage invites"],
      ["invite_revoke", { inviteId: "i1" }, "manage invites"],
      ["set_role", { inviteId: "i1", role: "owner" }, "change roles"],
      ["set_model", { model: "x" }, "choose the model"],
    ];
    let id = 0;
    for (const [method, args, what] of refused) {
      const answer = await viewer.ws.rpc(++id, method, [args]);
      expect([method, answer]).toEqual([
        method,
        { type: "rpc", id, success: false, error: "forbidden", status: 403, details: FORBIDDEN_VIEWER(what).details, done: true },
      ]);
    }
    // Once a writer opened the terminal, the viewer watches it; its size never counts.
    const { token: writerToken } = await invite(r, { role: "writer" });
    const writer = await join(r, writerToken, "_pk=w");
    const opened = await writer.ws.rpc(1, "term_open", [{ cols: 100, rows: 30 }]);
    expect(opened.success).toBe(true);
    const watching = await viewer.ws.rpc(++id, "term_open", [{ cols: 40, rows: 10 }]);
    expect(watching.result).toEqual({ cols: 100, rows: 30, termId: opened.result.termId });
    const termId = opened.result.termId;
    viewer.ws.send({ type: "duet_term_input", termId, data: btoa("echo hi\r") });
    expect(await viewer.ws.untilType("duet_error")).toEqual({ type: "duet_error", error: "forbidden" });
    viewer.ws.send({ type: "duet_term_resize", termId, cols: 20, rows: 5 });
    expect(await viewer.ws.untilType("duet_error")).toEqual({ type: "duet_error", error: "forbidden" });
    expect((await viewer.ws.rpc(++id, "term_detach", [{ termId }])).result).toEqual({ detached: true });
    expect((await writer.ws.rpc(2, "term_close", [{ termId }])).result).toEqual({ closed: true });
    viewer.ws.close();
    writer.ws.close();
  });

  it("lets a writer act but not clean up, fork or manage invites", async () => {
    const r = room("write");
    const { token } = await invite(r, { role: "writer" });
    const ran = await as(token, "POST", `/api/rooms/${r}/sandbox/exec`, { cmd: "echo ok > made.txt && cat made.txt" });
    expect(ran.status).toBe(200);
    expect(ran.body.result.stdout).toBe("ok\n");
    expect((await call("PUT", `/api/rooms/${r}/files/w.txt`, "w", { authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await as(token, "POST", `/api/rooms/${r}/checkpoints`, {})).status).toBe(200);
    expect((await as(token, "POST", `/api/rooms/${r}/policy`, { policy: "ask" })).body).toEqual({ policy: "ask" });
    for (const [method, path, body, what] of [
      ["POST", "cleanup", {}, "clean the room up"],
      ["POST", "fork", { to: room("fork") }, "fork the room"],
      ["POST", "invites", { role: "viewer" }, "manage invites"],
    ] as const) {
      const res = await as(token, method, `/api/rooms/${r}/${path}`, body);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: "forbidden", details: { role: [`a writer may not ${what}`] } });
    }
  });
});
