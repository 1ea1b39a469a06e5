// The approval policy on the worker (docs/protocol.md "Invites, roles and
// approvals"): `ask` with an approval over a second socket, a denial over
// HTTP, a second answer, a reconnect in the middle, a cancel that
// withdraws; `off`; the allow list (the server's "ls, cat" and the
// room's) against `ls; rm -rf /workspace`; and the policy, the room's
// allow list and its invites kept across an eviction.
import { env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { allowedWithoutAsking, parseAllowList } from "../src/approvals";
import { call, get, joined, post, room, script, ws, type Json } from "./support";

const testEnv = env as unknown as Env;

/** A model answer that runs `cmds`. */
function runs(...cmds: string[]) {
  return { kind: "stream" as const, pieces: ["On it.", ...cmds.map((c) => `<run>${c}</run>`)] };
}

describe("allow list", () => {
  it("matches a command's first words only when it chains, redirects and substitutes nothing", () => {
    const allow = parseAllowList("ls, cat ,git status,, ");
    expect(allow).toEqual(["ls", "cat", "git status"]);
    expect(allowedWithoutAsking("ls", allow)).toBe(true);
    expect(allowedWithoutAsking("ls -la src", allow)).toBe(true);
    expect(allowedWithoutAsking("git   status --short", allow)).toBe(true);
    expect(allowedWithoutAsking("git push", allow)).toBe(false);
    expect(allowedWithoutAsking("lsblk", allow)).toBe(false);
    for (const cmd of ["ls; rm -rf /workspace", "ls && rm x", "ls | sh", "ls > f", "cat < f", "ls $(rm x)", "ls `rm x`", "ls (x)", "ls\nrm x", "cat $HOME"]) {
      expect([cmd, allowedWithoutAsking(cmd, allow)]).toEqual([cmd, false]);
    }
    expect(allowedWithoutAsking("ls", [])).toBe(false);
  });
});

describe("the approval policy", () => {
  it("sets the policy and the room's allow list, in the state, and refuses bad ones", async () => {
    const r = room("pol");
    const s = await joined(r, "deltas=1");
    s.send({ type: "rpc", id: 1, method: "set_policy", args: [{ policy: "ask", allow: ["make  test", "git status"] }] });
    const patch = await s.until((f) => f.type === "duet_state" && f.patch.policy !== undefined);
    expect(patch.patch).toEqual({ policy: "ask", allow: ["ls", "cat", "make test", "git status"] });
    expect((await s.until((f) => f.type === "rpc")).result).toEqual({ policy: "ask" });
    const bad = await post(`/api/rooms/${r}/policy`, { policy: "maybe", allow: "ls" });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual({
      allow: ["must be an array of at most 64 commands, each 1 to 200 characters"],
      policy: ["must be auto, ask or off"],
    });
    expect((await post(`/api/rooms/${r}/approve`, { approvalId: "a1", approved: "yes" })).body.details).toEqual({
      approved: ["must be true or false"],
    });
    const unknown = await post(`/api/rooms/${r}/approve`, { approvalId: "a9", approved: true });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: "no such approval", details: { approvalId: ['no approval "a9" in this room'] } });
    s.close();
  });

  it("under ask, waits for a writer: approved over a socket, seen by a socket that joins meanwhile", async () => {
    const r = room("ask");
    await post(`/api/rooms/${r}/policy`, { policy: "ask" });
    const ann = await joined(r, "user=ann&_pk=ann&deltas=1");
    const bob = await joined(r, "user=bob&_pk=bob");
    const key = await script(`ask-${r}`, [runs("echo approved")]);
    const answer = post(`/api/rooms/${r}/message`, { text: `run it ${key}`, userId: "ann" });
    const request = await bob.until((f) => f.type === "duet_approval");
    expect(request).toEqual({ type: "duet_approval", phase: "request", approvalId: "a1", turnId: expect.any(String), cmd: "echo approved" });
    const patch = await ann.until((f) => f.type === "duet_state" && f.patch.approvals !== undefined);
    expect(patch.patch.approvals).toEqual([{ approvalId: "a1", turnId: request.turnId, cmd: "echo approved" }]);
    // A client that (re)connects sees it in the state.
    const cy = await ws(r, "user=cy");
    await cy.next();
    expect((await cy.next()).state.approvals).toEqual([{ approvalId: "a1", turnId: request.turnId, cmd: "echo approved" }]);
    cy.close();
    const decided = await bob.rpc(2, "approve", [{ approvalId: "a1", approved: true }]);
    expect(decided.result).toEqual({ decided: true });
    const frame = await ann.until((f) => f.type === "duet_approval" && f.phase === "decided");
    expect(frame).toEqual({ type: "duet_approval", phase: "decided", approvalId: "a1", approved: true, by: "bob" });
    const started = await ann.until((f) => f.type === "duet_exec" && f.phase === "start");
    expect(started).toMatchObject({ cmd: "echo approved", source: "agent" });
    expect((await answer).body.reply).toBe("On it.\n\nOutput (echo approved):\napproved");
    const second = await post(`/api/rooms/${r}/approve`, { approvalId: "a1", approved: false });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ error: "already decided", details: { approvalId: ['approval "a1" was decided already'] } });
    ann.close();
    bob.close();
  });

  it("denied over HTTP: nothing runs, the block says who, and the turn goes on", async () => {
    const r = room("deny");
    await post(`/api/rooms/${r}/policy`, { policy: "ask" });
    const s = await joined(r, "user=ann");
    const key = await script(`deny-${r}`, [runs("touch /workspace/denied", "ls -a", "ls; rm -rf /workspace")]);
    const answer = post(`/api/rooms/${r}/message`, { text: `do it ${key}`, userId: "ann" });
    const first = await s.until((f) => f.type === "duet_approval" && f.phase === "request");
    expect(first.cmd).toBe("touch /workspace/denied");
    expect((await post(`/api/rooms/${r}/approve`, { approvalId: first.approvalId, approved: false, userId: "bob" })).body).toEqual({
      decided: true,
    });
    // `ls -a` is on the server's allow list: it runs without asking; the chained one asks.
    const ranLs = await s.until((f) => (f.type === "duet_exec" && f.phase === "start") || (f.type === "duet_approval" && f.phase === "request"));
    expect([ranLs.type, ranLs.cmd]).toEqual(["duet_exec", "ls -a"]);
    const chained = await s.until((f) => f.type === "duet_approval" && f.phase === "request");
    expect(chained.cmd).toBe("ls; rm -rf /workspace");
    await post(`/api/rooms/${r}/approve`, { approvalId: chained.approvalId, approved: false, userId: "cy" });
    const reply = (await answer).body;
    expect(reply.reply).toBe(
      "On it.\n\nError (touch /workspace/denied):\ndenied by bob\n\nOutput (ls -a):\n.\n..\n\n\nError (ls; rm -rf /workspace):\ndenied by cy",
    );
    const runsStored = reply.messages.at(-1).runs;
    expect(runsStored[0]).toEqual({ cmd: "touch /workspace/denied", stdout: "", stderr: "", exitCode: null, error: "denied by bob", at: 6 });
    // Only the allowed command ran.
    const execs = (await call("POST", `/api/rooms/${r}/sandbox/exec`, { cmd: "ls -a /workspace" })).body.result.stdout;
    expect(execs).toBe(".\n..\n");
    s.close();
  });

  it("withdraws a request when the turn is cancelled", async () => {
    const r = room("wd");
    await post(`/api/rooms/${r}/policy`, { policy: "ask" });
    const s = await joined(r, "user=ann");
    const key = await script(`wd-${r}`, [runs("echo never")]);
    const answer = post(`/api/rooms/${r}/message`, { text: `go ${key}` });
    const request = await s.until((f) => f.type === "duet_approval");
    expect((await post(`/api/rooms/${r}/cancel`, { userId: "ann" })).body).toEqual({ cancelled: true });
    expect(await s.until((f) => f.type === "duet_approval" && f.phase === "withdrawn")).toEqual({
      type: "duet_approval",
      phase: "withdrawn",
      approvalId: request.approvalId,
    });
    const done = (await answer).body;
    expect(done.reply).toBeNull();
    expect(done.messages.at(-1).event).toMatchObject({ kind: "cancel", by: "ann" });
    expect(done.messages.some((m: Json) => m.runs?.some((x: Json) => x.stdout.includes("never")))).toBe(false);
    expect((await post(`/api/rooms/${r}/approve`, { approvalId: request.approvalId, approved: true })).status).toBe(409);
    s.close();
  });

  it("under off, runs nothing and says why", async () => {
    const r = room("off");
    await post(`/api/rooms/${r}/policy`, { policy: "off" });
    const key = await script(`off-${r}`, [runs("echo no")]);
    const reply = (await post(`/api/rooms/${r}/message`, { text: `try ${key}` })).body;
    expect(reply.reply).toBe("On it.\n\nError (echo no):\nnot run: the room's policy is off");
    expect((await get(`/api/rooms/${r}/checkpoints`)).body.checkpoints).toEqual([]);
  });

  it("keeps the policy, the room's allow list and the invites across an eviction", async () => {
    const r = room("keep");
    await post(`/api/rooms/${r}/policy`, { policy: "off", allow: ["make"] });
    const made = (await post(`/api/rooms/${r}/invites`, { role: "writer" })).body;
    const revoked = (await post(`/api/rooms/${r}/invites`, { role: "viewer" })).body;
    await call("DELETE", `/api/rooms/${r}/invites/${revoked.invite.id}`);
    await evictDurableObject(testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r)));
    const state = await ws(r);
    await state.next();
    const full = (await state.next()).state;
    expect([full.policy, full.allow]).toEqual(["off", ["ls", "cat", "make"]]);
    state.close();
    expect((await get(`/api/rooms/${r}/invites`)).body.invites).toEqual([made.invite]);
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
    expect((await call("GET", `/api/rooms/${r}/messages`, undefined, bearer(made.token))).status).toBe(200);
    expect((await call("GET", `/api/rooms/${r}/messages`, undefined, bearer(revoked.token))).status).toBe(401);
    // A cleanup keeps them too.
    await post(`/api/rooms/${r}/cleanup`, {});
    expect((await get(`/api/rooms/${r}/invites`)).body.invites).toEqual([made.invite]);
    expect((await call("GET", `/api/rooms/${r}/messages`, undefined, bearer(made.token))).status).toBe(200);
  });
});
