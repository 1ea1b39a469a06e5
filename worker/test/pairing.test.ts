// People in a room (docs/protocol.md "Talking to each other, and the room's
// records"): messages to the room that run no turn, the records of what
// people did (interrupt, upload, rename, a replaced shell), where the shell
// is (`cwd`, `shell.cwd`), and which socket caused a command or a turn
// (`byConnection`); through the Worker, the stand-in and the real sandbox.
import { SELF, env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { ORIGIN, TOKEN, chunked, execFrames, get, joined, modelRequests, post, room, script, ws, type Json } from "./support";

const testEnv = env as unknown as Env;

/** Frames until the first that matches, and that one. */
async function framesUntil(s: Json, what: (f: Json) => boolean): Promise<Json[]> {
  const frames: Json[] = [];
  for (;;) {
    const f = await s.next();
    frames.push(f);
    if (what(f)) return frames;
  }
}

/** Sends an rpc; the frames before its answer, and the answer. */
async function rpcFrames(s: Json, id: string, method: string, args: Json): Promise<[Json[], Json]> {
  s.send({ type: "rpc", id, method, args });
  const frames = await framesUntil(s, (f) => f.type === "rpc" && f.id === id);
  const answer = frames.pop();
  expect(answer.success, JSON.stringify(answer)).toBe(true);
  return [frames, answer];
}

const isMessage = (f: Json) => f.type === "duet_message";
const records = (messages: Json[]) => messages.filter((m) => m.event !== undefined).map((m) => m.event);

async function exec(r: string, cmd: string, extra: Json = {}) {
  const res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.result;
}

async function put(r: string, path: string, body: BodyInit) {
  const res = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/files/${path}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}` },
    body,
  });
  return { status: res.status, body: await res.json<Json>() };
}

describe("messages to the room", () => {
  it("are stored with to:room and answered at once, with no turn and no error", async () => {
    const r = room("p");
    const key = await script(r, [chunked("unused", 3)]);
    const bob = await joined(r, "user=bob&deltas=1");
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: `ok thanks ${key}`, userId: "ann", to: "room" });
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(["reply", "messages"]);
    expect(body.reply).toBeNull();
    expect(body.messages).toEqual([
      { id: "000000000001", role: "user", userId: "ann", text: `ok thanks ${key}`, ts: body.messages[0].ts, to: "room" },
    ]);
    // Broadcast like any message, and nothing else: no duet_ai, no model call.
    expect(await bob.next()).toEqual({ type: "duet_message", message: body.messages[0] });
    expect((await bob.rpc("r1", "cancel", [])).result).toEqual({ cancelled: false });
    expect(await modelRequests(r)).toEqual([]);
    // A message for the agent says so too.
    const asked = await post(`/api/rooms/${r}/message`, { text: `hi ${key}` });
    expect(asked.body.messages[1].to).toBe("agent");
    expect((await get(`/api/rooms/${r}/messages`)).body.messages[0].to).toBe("room");
  });

  it("refuse a `to` that is neither agent nor room", async () => {
    const r = room("p");
    for (const to of ["people", "", 3, ["room"]]) {
      const res = await post(`/api/rooms/${r}/message`, { text: "hi", to });
      expect(res.status, JSON.stringify(to)).toBe(400);
      expect(res.body).toEqual({ error: "invalid request", details: { to: [res.body.details.to[0]] } });
    }
    const s = await joined(r, "user=bob");
    const bad = await s.rpc(1, "message", [{ text: "hi", to: "everyone" }]);
    expect([bad.success, bad.status, Object.keys(bad.details)]).toEqual([false, 400, ["to"]]);
    expect((await get(`/api/rooms/${r}/messages`)).body.messages).toEqual([]);
  });

  it("go through at once while a turn runs, over rpc too, and a repeated clientId stores nothing", async () => {
    const r = room("p");
    const key = await script(r, [{ kind: "hang", pieces: ["thinking"] }]);
    const bob = await joined(r, "user=bob");
    const asked = post(`/api/rooms/${r}/message`, { text: `hang ${key}`, userId: "ann" });
    await bob.until((f) => f.type === "duet_ai" && f.phase === "start");
    const viaRpc = await bob.rpc("m", "message", [{ text: "brb", to: "room", clientId: "c-room" }]);
    expect(viaRpc.success, JSON.stringify(viaRpc)).toBe(true);
    expect(viaRpc.result.reply).toBeNull();
    expect(Object.keys(viaRpc.result)).toEqual(["reply", "messages"]);
    const said = viaRpc.result.messages[1];
    expect([said.userId, said.text, said.to, said.clientId]).toEqual(["bob", "brb", "room", "c-room"]);
    const again = await post(`/api/rooms/${r}/message`, { text: "brb", to: "room", clientId: "c-room" });
    expect(again.body).toEqual(viaRpc.result);
    expect((await post(`/api/rooms/${r}/cancel`, { userId: "ann" })).body).toEqual({ cancelled: true });
    const { body } = await asked;
    expect(body.messages.filter((m: Json) => m.text === "brb").length).toBe(1);
  });

  it("are in the agent's context, marked, with the room's records", async () => {
    const r = room("p");
    const key = await script(r, [chunked("Noted.", 3)]);
    await post(`/api/rooms/${r}/message`, { text: "ok thanks", userId: "bob", to: "room" });
    expect((await put(r, "notes.txt?userId=ann", "twelve bytes")).status).toBe(200);
    expect((await post(`/api/rooms/${r}/message`, { text: `what happened? ${key}`, userId: "ann" })).body.reply).toBe("Noted.");
    const [request] = await modelRequests(r);
    const said = request.body.messages.slice(1).map((m: Json) => [m.role, m.content]);
    expect(said).toEqual([
      ["user", "[to the room, not to you] bob: ok thanks"],
      ["user", "[in the room] ann uploaded notes.txt (12 bytes)"],
      ["user", `ann: what happened? ${key}`],
    ]);
  });
});

describe("records", () => {
  it("say who interrupted which command, only when one was interrupted", async () => {
    const r = room("p");
    const ada = await joined(r, "user=ada&deltas=1");
    expect((await ada.rpc(0, "interrupt", [])).result).toEqual({ interrupted: false });
    const running = post(`/api/rooms/${r}/sandbox/exec`, { cmd: "sleep 100", userId: "ada" });
    const start = await ada.until((f) => f.type === "duet_exec" && f.phase === "start");
    let interrupted = false;
    for (let i = 0; i < 200 && !interrupted; i++) {
      interrupted = (await post(`/api/rooms/${r}/sandbox/interrupt`, { userId: "bob" })).body.interrupted === true;
      if (!interrupted) await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(interrupted).toBe(true);
    // Stored before the interrupt's answer.
    const [record] = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(record).toEqual({
      id: "000000000001",
      role: "system",
      userId: "bob",
      text: "bob interrupted `sleep 100`",
      ts: record.ts,
      event: { kind: "interrupt", by: "bob", execId: start.execId, cmd: "sleep 100" },
    });
    expect((await ada.until(isMessage)).message).toEqual(record);
    expect((await running).body.result.interrupted).toBe(true);
    expect((await ada.until((f) => f.phase === "complete")).interrupted).toBe(true);
    // An interrupt with nothing running records nothing.
    await post(`/api/rooms/${r}/sandbox/interrupt`, { userId: "bob" });
    expect((await get(`/api/rooms/${r}/messages`)).body.messages.length).toBe(1);
  });

  it("say who uploaded which file, anonymous by default; a bad userId writes nothing", async () => {
    const r = room("p");
    const bob = await joined(r, "user=bob&deltas=1");
    expect(await put(r, "docs/notes.txt?userId=%20ann%20", "hello world!")).toEqual({ status: 200, body: { path: "docs/notes.txt", size: 12 } });
    const record = (await bob.until(isMessage)).message;
    expect([record.role, record.userId, record.text]).toEqual(["system", "ann", "ann uploaded docs/notes.txt (12 bytes)"]);
    expect(record.event).toEqual({ kind: "upload", by: "ann", path: "docs/notes.txt", size: 12 });
    expect((await put(r, "one.txt", "x")).status).toBe(200);
    expect((await bob.until(isMessage)).message.event).toEqual({ kind: "upload", by: "anonymous", path: "one.txt", size: 1 });
    const bad = await put(r, `bad.txt?userId=${"x".repeat(33)}`, "x");
    expect([bad.status, Object.keys(bad.body.details)]).toEqual([400, ["userId"]]);
    expect((await exec(r, "ls")).stdout).toBe("docs\none.txt\n");
    expect(records((await get(`/api/rooms/${r}/messages`)).body.messages).length).toBe(2);
  });

  it("say who renamed to what; the socket carries its new name in presence, messages and commands, across an eviction", async () => {
    const r = room("p");
    const bob = await joined(r, "user=bob&_pk=pb");
    const ada = await joined(r, "user=ada&_pk=pa");
    await bob.untilType("duet_presence");
    for (const [args, problem] of [
      [[{}], "is required"],
      [[{ name: "" }], "must not be empty"],
      [[{ name: "x".repeat(33) }], "must be at most 32 characters"],
      [[{ name: 7 }], "must be a string"],
    ] as [Json, string][]) {
      const bad = await bob.rpc("bad", "rename", args);
      expect(bad).toEqual({ type: "rpc", id: "bad", success: false, error: "invalid request", status: 400, details: { name: [problem] }, done: true });
    }
    const answer = await bob.rpc("n", "rename", [{ name: "ann" }]);
    expect(answer.result).toEqual({ name: "ann" });
    // The new presence, then the record (as duet serve sends them).
    const presence = await ada.next();
    expect(presence.type).toBe("duet_presence");
    expect(presence.users.map((u: Json) => [u.id, u.name])).toEqual([
      ["pb", "ann"],
      ["pa", "ada"],
    ]);
    const record = (await ada.next()).state.messages[0];
    expect([record.role, record.userId, record.text]).toEqual(["system", "bob", "bob is now ann"]);
    expect(record.event).toEqual({ kind: "rename", by: "bob", from: "bob", to: "ann" });
    // The same name again changes nothing.
    expect((await bob.rpc("n2", "rename", [{ name: "ann" }])).result).toEqual({ name: "ann" });
    await evictDurableObject(testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r)));
    const said = await bob.rpc("m", "message", [{ text: "hi all", to: "room" }]);
    expect(said.result.messages.at(-1).userId).toBe("ann");
    expect((await bob.rpc("x", "exec", [{ cmd: "true" }])).success).toBe(true);
    const later = await ws(r);
    await later.next();
    expect((await later.next()).state.execs[0].by).toBe("ann");
    expect((await later.next()).users.map((u: Json) => u.name)).toEqual(["ann", "ada", "anonymous"]);
  });

  it("keep the shell at a timeout: no record of a replaced shell", async () => {
    const r = room("p");
    await exec(r, "cd /tmp && export KEPT=1 && f() { echo fn; }");
    const ada = await joined(r, "user=ada&deltas=1");
    const result = await exec(r, "sleep 30", { timeoutMs: 300, userId: "bob" });
    expect(result.timedOut).toBe(true);
    expect(result.error).toBeUndefined();
    const frames = await framesUntil(ada, (f: Json) => f.type === "duet_exec" && f.phase === "complete");
    expect(frames.at(-1).cwd).toBe("/tmp");
    expect((await exec(r, 'pwd; echo "[$KEPT]"; f')).stdout).toBe("/tmp\n[1]\nfn\n");
    const stored = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(stored.filter((m: Json) => m.event?.kind === "shell")).toEqual([]);
  });
});

describe("the shell", () => {
  it("is where the last command left it: in duet_exec complete, the state and duet_state", async () => {
    const r = room("p");
    const full = await joined(r, "user=ada");
    const deltas = await joined(r, "user=bob&deltas=1");
    await full.untilType("duet_presence");
    await exec(r, "mkdir -p app && cd app");
    const { complete } = await execFrames(deltas);
    expect(complete.cwd).toBe("/workspace/app");
    expect(await deltas.next()).toEqual({ type: "duet_state", patch: { shell: { cwd: "/workspace/app" } } });
    expect((await full.until((f) => f.type === "cf_agent_state")).state.shell).toEqual({ cwd: "/workspace/app" });
    // A command's own cwd is for it only; an unmoved shell sends no patch.
    expect((await exec(r, "pwd", { cwd: "/tmp" })).stdout).toBe("/tmp\n");
    expect((await execFrames(deltas)).complete.cwd).toBe("/workspace/app");
    await exec(r, "cd ..");
    expect((await framesUntil(deltas, (f) => f.type === "duet_state")).filter((f) => f.type === "cf_agent_state")).toEqual([]);
    await exec(r, "cd app");
    await deltas.until((f) => f.type === "duet_state" && f.patch.shell.cwd === "/workspace/app");
    // Across an eviction, and for newcomers.
    await evictDurableObject(testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r)));
    const later = await ws(r);
    await later.next();
    expect((await later.next()).state.shell).toEqual({ cwd: "/workspace/app" });
    // A cleanup starts afresh.
    await post(`/api/rooms/${r}/cleanup`, {});
    const emptied = await deltas.until((f) => f.type === "cf_agent_state");
    expect(emptied.state.shell).toEqual({ cwd: "/workspace" });
    expect((await exec(r, "pwd")).stdout).toBe("/workspace\n");
  });

  it("starts afresh in /workspace after `exit`, exports gone, and says so", async () => {
    const r = room("p");
    await exec(r, "cd /tmp && export GONE=1");
    const ada = await joined(r, "user=ada&deltas=1");
    const result = await exec(r, "exit 4", { userId: "ada" });
    expect([result.exitCode, typeof result.error]).toEqual([4, "string"]);
    const frames = await framesUntil(ada, isMessage);
    const complete = frames.find((f) => f.phase === "complete");
    expect(complete.cwd).toBe("/workspace");
    expect(frames.find((f) => f.type === "duet_state").patch).toEqual({ shell: { cwd: "/workspace" } });
    const record = frames.at(-1).message;
    expect(record.event).toEqual({ kind: "shell", by: "ada", reason: "exit", cwd: "/workspace", reset: true, execId: complete.execId });
    expect(record.text).toBe("`exit 4` ended the shell: the next command runs in a fresh shell in /workspace");
    expect((await exec(r, 'pwd; echo "[$GONE]"')).stdout).toBe("/workspace\n[]\n");
  });
});

describe("byConnection", () => {
  it("names the socket whose rpc ran a command or began a turn, and its agent's commands; none over HTTP", async () => {
    const r = room("p");
    const key = await script(r, [chunked("<run>echo from-agent</run>", 5), chunked("<run>echo again</run>", 5)]);
    const ada = await joined(r, "user=ada&_pk=ada-1");
    const anon = await joined(r, "user=bob");
    const anonId = (await ada.untilType("duet_presence")).users[1].id;
    const startOf = (frames: Json[]) => frames.find((f) => f.type === "duet_exec" && f.phase === "start");
    expect(startOf((await rpcFrames(ada, "1", "exec", [{ cmd: "true" }]))[0]).byConnection).toBe("ada-1");
    await rpcFrames(anon, "2", "exec", [{ cmd: "true" }]);
    expect((await ada.until((f) => f.phase === "start")).byConnection).toBe(anonId);
    await exec(r, "true");
    expect("byConnection" in (await ada.until((f) => f.phase === "start"))).toBe(false);
    // A turn: its start and its commands.
    const [turn] = await rpcFrames(ada, "3", "message", [{ text: `go ${key}` }]);
    expect(turn.find((f) => f.type === "duet_ai" && f.phase === "start").byConnection).toBe("ada-1");
    expect(turn.filter((f) => f.type === "duet_ai" && f.phase !== "start").every((f) => !("byConnection" in f))).toBe(true);
    const start = startOf(turn);
    expect([start.by, start.source, start.byConnection]).toEqual(["agent", "agent", "ada-1"]);
    await post(`/api/rooms/${r}/message`, { text: `again ${key}` });
    const http = await framesUntil(ada, (f) => f.type === "duet_exec" && f.phase === "start");
    expect(http.filter((f) => f.type === "duet_ai" && f.phase === "start").length).toBe(1);
    expect(http.filter((f) => "byConnection" in f)).toEqual([]);
  });
});

describe("a cancelled turn", () => {
  it("keeps the commands it had run and the text so far", async () => {
    const r = room("p");
    const key = await script(r, [chunked("Checking.\n<run>echo one</run>\n<run>sleep 60</run>", 6)]);
    const bob = await joined(r, "user=bob");
    const answer = post(`/api/rooms/${r}/message`, { text: `go ${key}`, userId: "ann" });
    await bob.until((f) => f.type === "duet_exec" && f.phase === "start" && f.cmd === "sleep 60");
    const cancel = await bob.rpc("c", "cancel", []);
    expect(cancel.result).toEqual({ cancelled: true });
    const { body } = await answer;
    expect([body.reply, body.error]).toEqual([null, "the agent's turn was cancelled"]);
    const reply = body.messages[1];
    expect(reply).toMatchObject({ role: "agent", text: "Checking.\n\nOutput (echo one):\none", cancelledBy: "bob" });
    expect(reply.runs).toEqual([{ cmd: "echo one", stdout: "one\n", stderr: "", exitCode: 0, at: 9 }]);
    expect(body.messages[2].event).toMatchObject({ kind: "cancel", by: "bob" });
    expect(body.messages.length).toBe(3);
  });
});
