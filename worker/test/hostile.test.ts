// Hostile input (issue 10, item 8; tests/it/server/hostile_input.rs): random and
// mutated HTTP bodies to every endpoint, room ids, file paths, queries and
// socket frames, from a seeded generator (test/fuzz.ts). No exception
// escapes (never a 500), every error has the protocol's shape, and the room
// keeps working afterwards.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Gen } from "./fuzz";
import { ORIGIN, TOKEN, get, joined, post, room, script, type Json } from "./support";

const SEED = 20261201;

interface Answer {
  status: number;
  text: string;
}

async function send(method: string, path: string, body?: Uint8Array | string): Promise<Answer> {
  const res = await SELF.fetch(ORIGIN + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body,
  });
  return { status: res.status, text: await res.text() };
}

/** Checks an answer has the protocol's shape: a JSON error with string details, or a text 404. */
function expectProtocolAnswer(a: Answer, what: string): Json {
  const context = `${what} -> ${a.status} ${a.text.slice(0, 300)}`;
  expect([200, 207, 400, 404, 405, 413, 429, 503, 507], context).toContain(a.status);
  if (a.status === 404) return undefined;
  if (a.status === 200 && what.startsWith("GET") && what.includes("/files/")) return undefined;
  let body: Json;
  expect(() => (body = JSON.parse(a.text)), context).not.toThrow();
  expect(typeof body === "object" && body !== null && !Array.isArray(body), context).toBe(true);
  if (a.status >= 400) {
    expect(typeof body.error, context).toBe("string");
    if (a.status === 400) {
      expect(Object.keys(body).sort(), context).toEqual(["details", "error"]);
      for (const messages of Object.values(body.details)) {
        expect(Array.isArray(messages) && (messages as unknown[]).every((m) => typeof m === "string"), context).toBe(true);
      }
    }
  }
  return body;
}

/** The room still answers: a chat turn, a command and a socket. */
async function expectWorking(r: string) {
  const key = await script(`${r}-ok`, [{ kind: "stream", pieces: ["Still fine."] }]);
  const said = await post(`/api/rooms/${r}/message`, { text: `well? ${key}`, clientId: `ok-${r}` });
  expect([said.status, said.body.reply], JSON.stringify(said.body)).toEqual([200, "Still fine."]);
  const ran = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo alive" });
  expect(ran.body.result?.stdout, JSON.stringify(ran.body)).toBe("alive\n");
  const s = await joined(r, "user=ada");
  expect((await s.rpc("ok", "cancel", [])).success).toBe(true);
  s.close();
}

describe("hostile input", () => {
  it("HTTP bodies to every endpoint: answered in the protocol's shape, never a 500", async () => {
    const g = new Gen(SEED);
    const r = room("fz");
    const valid: Record<string, Record<string, unknown>> = {
      message: { text: "hi", userId: "ada", clientId: "c1" },
      "sandbox/exec": { cmd: "true", timeoutMs: 2000, cwd: "/tmp", env: { A: "b" }, userId: "ada" },
      "sandbox/interrupt": { execId: "x00000000001", userId: "ada" },
      cancel: { turnId: "t0", userId: "ada" },
      cleanup: { userId: "ada" },
    };
    const weights = ["message", "sandbox/exec", "sandbox/exec", "sandbox/interrupt", "cancel", "cancel"];
    for (let i = 0; i < 150; i++) {
      // A cleanup destroys the sandbox: once is enough.
      const op = i === 120 ? "cleanup" : g.pick(weights);
      let body = g.body(valid[op]);
      // A command with no timeout of its own could wait for a minute.
      if (op === "sandbox/exec" && typeof body === "string") {
        try {
          const v = JSON.parse(body);
          if (v && typeof v === "object" && !Array.isArray(v) && v.timeoutMs === undefined) body = JSON.stringify({ ...v, timeoutMs: 2000 });
        } catch {
          // not JSON: sent as it is
        }
      }
      const answer = await send("POST", `/api/rooms/${r}/${op}`, body);
      expectProtocolAnswer(answer, `POST ${op} ${typeof body === "string" ? body.slice(0, 200) : `bytes ${Array.from(body)}`} (seed ${SEED}, case ${i})`);
    }
    await expectWorking(r);
  });

  it("refuses a lone surrogate in a body or frame, as duet serve's JSON parser does", async () => {
    const r = room("fz");
    for (const [op, body] of [
      ["sandbox/exec", '{"cmd":"true","cwd":"a\\ud800b"}'],
      ["message", '{"text":"hi \\udfff"}'],
      ["message", '{"text":"hi","env":{"\\ud800":1}}'],
    ]) {
      const a = await send("POST", `/api/rooms/${r}/${op}`, body);
      expect(a.status, body).toBe(400);
      expect(Object.keys(JSON.parse(a.text).details)).toEqual(["body"]);
    }
    // A pair is one character: fine.
    const pair = await send("POST", `/api/rooms/${r}/sandbox/exec`, '{"cmd":"echo \\ud83d\\ude00"}');
    expect(JSON.parse(pair.text).result.stdout).toBe("😀\n");
    const s = await joined(r);
    s.send('{"type":"rpc","id":"s","method":"message","args":[{"text":"\\ud800"}]}');
    expect((await s.untilType("duet_error")).error).toContain("lone UTF-16 surrogate");
    expect((await get(`/api/rooms/${r}/messages`)).body.messages).toEqual([]);
    s.close();
  });

  it("room ids, queries, methods and file paths: 400 before anything is touched, or a plain answer", async () => {
    const g = new Gen(SEED + 1);
    const r = room("fz");
    for (let i = 0; i < 60; i++) {
      const id = g.segment();
      const a = await send("GET", `/api/rooms/${id}/messages?before=${g.segment()}&limit=${g.segment()}`);
      const body = expectProtocolAnswer(a, `GET room ${JSON.stringify(id)} (case ${i})`);
      if (a.status === 400) expect(Object.keys(body.details).every((k) => ["room", "before", "limit"].includes(k))).toBe(true);
      const m = g.pick(["DELETE", "PATCH", "PUT", "GET", "OPTIONS"]);
      expectProtocolAnswer(await send(m, `/api/rooms/${id}/${g.pick(["message", "ws", "sandbox/exec", g.segment()])}`), `${m} ${id} (case ${i})`);
    }
    for (let i = 0; i < 60; i++) {
      const path = Array.from({ length: 1 + g.int(4) }, () => g.segment()).join("/");
      const got = await send("GET", `/api/rooms/${r}/files/${path}`);
      const body = expectProtocolAnswer(got, `GET /files/${path} (case ${i})`);
      if (got.status === 400) expect(Object.keys(body.details), path).toEqual(["path"]);
      if (i % 3 === 0) {
        const put = await send("PUT", `/api/rooms/${r}/files/${path}`, g.string(30));
        const answer = expectProtocolAnswer(put, `PUT /files/${path} (case ${i})`);
        if (put.status === 400) expect(Object.keys(answer.details), path).toEqual(["path"]);
      }
    }
    await expectWorking(r);
  });

  it("socket frames: each answered in the protocol's shape, and the socket stays open", async () => {
    const g = new Gen(SEED + 2);
    const r = room("fz");
    const rpc = () => ({
      type: "rpc",
      id: g.pick([1, "a", null, { x: 1 }, [2], g.string(5)]),
      method: g.pick(["cancel", "interrupt", "message", "nope", "__proto__", "constructor", g.string(6)]),
      args: g.pick([[], [{}], [{ text: "hi" }], [g.json(2)], g.json(2), [null], [{ turnId: g.json(1) }]]),
    });
    for (let round = 0; round < 3; round++) {
      const s = await joined(r, `user=fz${round}`);
      for (let i = 0; i < 60; i++) {
        const k = g.int(8);
        if (k === 0) s.socket.send(Uint8Array.from({ length: g.int(20) }, () => g.int(256)));
        else if (k === 1) s.send(g.string(30));
        else if (k === 2) s.send(JSON.stringify(g.json()));
        else if (k === 3) s.send(JSON.stringify({ type: g.pick(["cf_agent_state", "duet_typing", g.string(5)]), state: g.json(2) }));
        else s.send(JSON.stringify(g.mutate(rpc())));
      }
      s.send({ type: "rpc", id: "marker", method: "cancel", args: [] });
      await s.until((f) => {
        expect(typeof f.type, JSON.stringify(f)).toBe("string");
        if (f.type === "duet_error") expect(typeof f.error).toBe("string");
        if (f.type === "rpc") {
          expect([typeof f.success, f.done], JSON.stringify(f)).toEqual(["boolean", true]);
          if (!f.success) expect(typeof f.error, JSON.stringify(f)).toBe("string");
        }
        return f.type === "rpc" && f.id === "marker";
      });
      expect(s.closed).toBe(false);
      s.close();
    }
    await expectWorking(r);
  });
});
