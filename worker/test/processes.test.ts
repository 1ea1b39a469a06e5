// Background processes through the worker (docs/protocol.md "Background
// processes and ports"): started over HTTP and rpc, listed, their logs,
// followed (the log so far, then the output without gap or repeat), killed
// (143, 137 when SIGKILL was needed), ended by themselves, the cap, the
// error shapes, and the cleanup that ends them all first. Real processes
// in the stand-in's `duet serve` sandbox.
import { describe, expect, it } from "vitest";
import { call, get, joined, post, room, sleep, type Json, type Ws } from "./support";

const WAIT_MS = 40_000;

/** Waits until `check` holds for the room's process `id` (over HTTP). */
async function processUntil(r: string, id: string, check: (p: Json) => boolean): Promise<Json> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const res = await get(`/api/rooms/${r}/processes/${id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (check(res.body.process)) return res.body.process;
    if (Date.now() > deadline) throw new Error(`process ${id} never got there: ${JSON.stringify(res.body)}`);
    await sleep(100);
  }
}

async function start(r: string, body: Json): Promise<Json> {
  const res = await post(`/api/rooms/${r}/processes`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.process;
}

/** The output frames of process `id` a follower gets until its exit frame. */
async function followed(s: Ws, id: string): Promise<{ stdout: string; stderr: string; exit: Json }> {
  let stdout = "";
  let stderr = "";
  for (;;) {
    const f = await s.until((x) => x.type === "duet_process" && (x.processId === id || x.process?.id === id));
    if (f.phase === "stdout") stdout += f.data;
    else if (f.phase === "stderr") stderr += f.data;
    else if (f.phase === "exit") return { stdout, stderr, exit: f };
  }
}

describe("background processes", () => {
  it("start over HTTP: the process, its start frame to every socket, the state, its log and its exit", async () => {
    const r = room("P");
    const plain = await joined(r, "user=ada");
    const deltas = await joined(r, "user=bob&deltas=1");
    const before = Date.now();
    const p = await start(r, { cmd: "  /bin/echo out; echo err >&2; pwd  ", userId: "carol" });
    expect(p).toEqual({
      id: p.id,
      name: "echo",
      cmd: "/bin/echo out; echo err >&2; pwd",
      by: "carol",
      status: "running",
      exitCode: null,
      startedAt: p.startedAt,
    });
    expect(p.id).toMatch(/^p[0-9]+$/);
    expect(Object.keys(p)).toEqual(["id", "name", "cmd", "by", "status", "exitCode", "startedAt"]);
    expect(p.startedAt).toBeGreaterThanOrEqual(before - 1000);
    for (const s of [plain, deltas]) {
      const f = await s.until((x) => x.type === "duet_process");
      expect(f).toEqual({ type: "duet_process", phase: "start", process: p });
    }
    // Nobody follows it: only its exit comes, to everyone.
    for (const s of [plain, deltas]) {
      const f = await s.until((x) => x.type === "duet_process");
      expect(f).toEqual({ type: "duet_process", phase: "exit", processId: p.id, status: "exited", exitCode: 0 });
    }
    const ended = await processUntil(r, p.id, (x) => x.status === "exited");
    expect(ended.endedAt).toBeGreaterThanOrEqual(p.startedAt);
    expect((await get(`/api/rooms/${r}/processes/${p.id}/logs`)).body).toEqual({ stdout: "out\n/workspace\n", stderr: "err\n" });
    // The deltas socket got patches of `processes`; the other full states.
    const patch = await deltas.until((x) => x.type === "duet_state" && x.patch.processes?.[0]?.status === "exited");
    expect(patch.patch.processes).toEqual([ended]);
    const state = await plain.until((x) => x.type === "cf_agent_state" && x.state.processes[0]?.status === "exited");
    expect(state.state.processes).toEqual([ended]);
    expect(state.state.ports).toEqual([]);
    expect((await get(`/api/rooms/${r}/processes`)).body).toEqual({ processes: [ended] });
  });

  it("rpc: start as the socket's user, follow (the log so far, then every byte once), unfollow, kill", async () => {
    const r = room("P");
    const s = await joined(r, "user=ada");
    const answer = await s.rpc(1, "process_start", [{ cmd: "for i in $(seq 1 40); do echo line$i; sleep 0.05; done; sleep 600", name: "counter" }]);
    expect(answer.success, JSON.stringify(answer)).toBe(true);
    const p = answer.result.process;
    expect(p.name).toBe("counter");
    expect(p.by).toBe("ada");
    // Some output first, then follow in the middle of it.
    await sleep(600);
    const follow = await s.rpc(2, "process_follow", [{ processId: p.id }]);
    expect(follow.success, JSON.stringify(follow)).toBe(true);
    expect(Object.keys(follow.result)).toEqual(["processId", "stdout", "stderr"]);
    expect(follow.result.processId).toBe(p.id);
    let seen = follow.result.stdout as string;
    const want = Array.from({ length: 40 }, (_, i) => `line${i + 1}\n`).join("");
    while (seen !== want) {
      const f = await s.until((x) => x.type === "duet_process" && x.processId === p.id);
      expect(f.phase, JSON.stringify(f)).toBe("stdout");
      seen += f.data;
      expect(want.startsWith(seen), seen).toBe(true);
    }
    expect((await s.rpc(3, "process_unfollow", [{ processId: p.id }])).result).toEqual({ unfollowed: true });
    expect((await s.rpc(4, "process_unfollow", [{ processId: "p999999" }])).result).toEqual({ unfollowed: true });
    // Its exit goes out before the kill's answer.
    s.send({ type: "rpc", id: 5, method: "process_kill", args: [{ processId: p.id }] });
    const exit = await s.until((x) => (x.type === "duet_process" && x.phase === "exit") || x.type === "rpc");
    expect(exit).toEqual({ type: "duet_process", phase: "exit", processId: p.id, status: "killed", exitCode: 143 });
    const killed = await s.until((x) => x.type === "rpc" && x.id === 5);
    expect(killed.result).toEqual({ killed: true });
    expect((await s.rpc(6, "process_kill", [{ processId: p.id }])).result).toEqual({ killed: false });
    expect((await get(`/api/rooms/${r}/processes/${p.id}`)).body.process).toMatchObject({ status: "killed", exitCode: 143 });
  });

  it("a follower gets the output frames until the exit, after its last output", async () => {
    const r = room("P");
    const s = await joined(r);
    const p = (await s.rpc(1, "process_start", [{ cmd: "read -t 1 x; printf 'a%.0s' $(seq 1 3000); echo; echo bye >&2; exit 3" }])).result.process;
    const follow = await s.rpc(2, "process_follow", [{ processId: p.id }]);
    expect(follow.result).toEqual({ processId: p.id, stdout: "", stderr: "" });
    const got = await followed(s, p.id);
    expect(got.stdout).toBe(`${"a".repeat(3000)}\n`);
    expect(got.stderr).toBe("bye\n");
    expect(got.exit).toEqual({ type: "duet_process", phase: "exit", processId: p.id, status: "exited", exitCode: 3 });
    expect(p.by).toBe("anonymous");
    expect(p.name).toBe("read");
  });

  it("DELETE kills with SIGTERM, then SIGKILL 2 s later when it holds on", async () => {
    const r = room("P");
    const stubborn = await start(r, { cmd: "trap '' TERM; echo ready; while :; do sleep 0.1; done" });
    await processUntil(r, stubborn.id, () => true);
    await waitForLog(r, stubborn.id, "ready");
    const res = await call("DELETE", `/api/rooms/${r}/processes/${stubborn.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ killed: true });
    const ended = (await get(`/api/rooms/${r}/processes/${stubborn.id}`)).body.process;
    expect(ended).toMatchObject({ status: "killed", exitCode: 137 });
    expect(ended.endedAt - ended.startedAt).toBeGreaterThanOrEqual(1500);
    expect((await call("DELETE", `/api/rooms/${r}/processes/${stubborn.id}`)).body).toEqual({ killed: false });
  });

  it("outlives the socket that started it", async () => {
    const r = room("P");
    const s = await joined(r, "user=ada");
    const p = (await s.rpc(1, "process_start", [{ cmd: "sleep 600" }])).result.process;
    s.close();
    await sleep(500);
    expect((await get(`/api/rooms/${r}/processes/${p.id}`)).body.process.status).toBe("running");
    expect((await call("DELETE", `/api/rooms/${r}/processes/${p.id}`)).body).toEqual({ killed: true });
  });

  it("refuses bad requests, unknown ids and more than 8 at once, with the documented shapes", async () => {
    const r = room("P");
    for (const [body, field] of [
      [{}, "cmd"],
      [{ cmd: "   " }, "cmd"],
      [{ cmd: "a\u0000b" }, "cmd"],
      [{ cmd: "x", name: "" }, "name"],
      [{ cmd: "x", name: "n".repeat(33) }, "name"],
    ] as const) {
      const res = await post(`/api/rooms/${r}/processes`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("invalid request");
      expect(Object.keys(res.body.details)).toEqual([field]);
    }
    const unknown = { error: "no such process", details: { processId: ['no process "p9" in this room'] } };
    for (const path of ["p9", "p9/logs"]) {
      const res = await get(`/api/rooms/${r}/processes/${path}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(unknown);
    }
    expect((await call("DELETE", `/api/rooms/${r}/processes/p9`)).body).toEqual(unknown);
    expect((await call("PUT", `/api/rooms/${r}/processes`)).status).toBe(405);
    const s = await joined(r);
    for (const method of ["process_kill", "process_follow"]) {
      const f = await s.rpc(method, method, [{ processId: "p9" }]);
      expect(f).toEqual({ type: "rpc", id: method, success: false, error: "no such process", status: 404, details: unknown.details, done: true });
    }
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await start(r, { cmd: "sleep 600" })).id);
    const over = await post(`/api/rooms/${r}/processes`, { cmd: "sleep 600" });
    expect(over.status).toBe(409);
    expect(over.body).toEqual({ error: "too many processes", details: { processes: ["at most 8 processes run at once in a room"] } });
    const rpcOver = await s.rpc("over", "process_start", [{ cmd: "sleep 600" }]);
    expect(rpcOver).toMatchObject({ success: false, status: 409, error: "too many processes" });
    // One ends: there is room for one more.
    expect((await call("DELETE", `/api/rooms/${r}/processes/${ids[0]}`)).body).toEqual({ killed: true });
    await start(r, { cmd: "sleep 600" });
    expect((await post(`/api/rooms/${r}/cleanup`, {})).status).toBe(200);
  });

  it("cleanup kills every process first: their exits before duet_cleanup, then empty processes and ports", async () => {
    const r = room("P");
    const s = await joined(r, "deltas=1");
    const a = await start(r, { cmd: "sleep 600" });
    const b = await start(r, { cmd: "sleep 600" });
    expect((await post(`/api/rooms/${r}/cleanup`, { userId: "ada" })).status).toBe(200);
    const exits: string[] = [];
    for (;;) {
      const f = await s.until((x) => (x.type === "duet_process" && x.phase === "exit") || x.type === "duet_cleanup");
      if (f.type === "duet_cleanup") break;
      expect(f.status).toBe("killed");
      expect(f.exitCode).toBe(143);
      exits.push(f.processId);
    }
    expect(exits.sort()).toEqual([a.id, b.id].sort());
    const state = await s.untilType("cf_agent_state");
    expect(state.state.processes).toEqual([]);
    expect(state.state.ports).toEqual([]);
    expect((await get(`/api/rooms/${r}/processes`)).body).toEqual({ processes: [] });
  });
});

async function waitForLog(r: string, id: string, text: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await get(`/api/rooms/${r}/processes/${id}/logs`)).body.stdout.includes(text)) {
    if (Date.now() > deadline) throw new Error(`no ${text} in the log of ${id}`);
    await sleep(100);
  }
}
