// The Worker over HTTP: every endpoint of docs/protocol.md with its error
// answers, as tests/it/neutral/server_http.rs checks `duet serve`.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ORIGIN, call, get, openSocket, post, room } from "./support";

/** The `details` fields of a 400 answer. */
function fields(body: any): string[] {
  expect(body.error, JSON.stringify(body)).toBe("invalid request");
  return Object.keys(body.details);
}

describe("http", () => {
  it("answers /health with ok in text, without a token", async () => {
    const res = await SELF.fetch(`${ORIGIN}/health`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
  });

  it("needs the token everywhere but /health", async () => {
    const r = room();
    for (const token of [undefined, "wrong"]) {
      for (const [method, path] of [
        ["POST", `/api/rooms/${r}/message`],
        ["POST", `/api/rooms/${r}/sandbox/exec`],
        ["POST", `/api/rooms/${r}/cleanup`],
        ["GET", `/api/rooms/${r}/messages`],
        ["GET", `/api/rooms/${r}/ws`],
        ["GET", "/nowhere"],
      ]) {
        const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
        const body = method === "POST" ? { text: "x" } : undefined;
        const res = await call(method, path, body, headers);
        expect([res.status, res.body], `${method} ${path}`).toEqual([401, { error: "unauthorized" }]);
      }
    }
    expect((await get(`/api/rooms/${r}/messages`)).status).toBe(200);
    // A socket may pass it as ?token=, and only the right one.
    expect((await openSocket(`/api/rooms/${r}/ws?user=ada`, null)).status).toBe(401);
    expect((await openSocket(`/api/rooms/${r}/ws?user=ada`, "nope")).status).toBe(401);
    const ok = await openSocket(`/api/rooms/${r}/ws?user=ada`);
    expect(ok.status).toBe(101);
    expect((await ok.ws!.next()).type).toBe("cf_agent_identity");
    ok.ws!.close();
    // The query token does not open HTTP endpoints.
    expect((await call("GET", `/api/rooms/${r}/messages?token=test-token`, undefined, {})).status).toBe(401);
  });

  it("names every bad field", async () => {
    const r = room();
    const cases: [string, unknown, string[]][] = [
      ["/api/rooms/bad!room/message", { text: "hi" }, ["room"]],
      ["/api/rooms/-r/sandbox/exec", {}, ["cmd", "room"]],
      [`/api/rooms/${r}/message`, {}, ["text"]],
      [`/api/rooms/${r}/message`, { text: "  \n " }, ["text"]],
      [`/api/rooms/${r}/message`, { text: "x".repeat(8001) }, ["text"]],
      [`/api/rooms/${r}/message`, { text: "hi", userId: "x".repeat(33) }, ["userId"]],
      [`/api/rooms/${r}/message`, { text: 5, userId: "" }, ["text", "userId"]],
      [`/api/rooms/${r}/sandbox/exec`, { cmd: "" }, ["cmd"]],
      [`/api/rooms/${r}/sandbox/exec`, { cmd: "a\u0000b" }, ["cmd"]],
      [`/api/rooms/${r}/sandbox/exec`, { cmd: "ls", timeoutMs: "soon", cwd: 7, env: { "1A": "x" } }, ["cwd", "env", "timeoutMs"]],
      [`/api/rooms/${r}/sandbox/exec`, { cmd: "ls", env: ["A"] }, ["env"]],
      [`/api/rooms/${r}/sandbox/interrupt`, { execId: 5 }, ["execId"]],
      [`/api/rooms/${r}/cancel`, { turnId: [] }, ["turnId"]],
      [`/api/rooms/${r}/cleanup`, { userId: "a\u0007" }, ["userId"]],
    ];
    for (const [path, body, expected] of cases) {
      const res = await post(path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(fields(res.body), `${path} ${JSON.stringify(body)}`).toEqual(expected);
    }
    const exec = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "", env: { "1x": "a", ok: 2 } });
    expect(exec.body.details).toEqual({
      cmd: ["must not be empty"],
      env: ['"1x" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)', "ok: must be a string"],
    });
    for (const raw of ["{not json", "[1,2]", '"text"']) {
      const res = await post(`/api/rooms/${r}/message`, raw);
      expect([res.status, fields(res.body)], raw).toEqual([400, ["body"]]);
    }
    for (const [query, field] of [
      ["limit=101", "limit"],
      ["limit=ten", "limit"],
      ["before=abc", "before"],
    ]) {
      const res = await get(`/api/rooms/${r}/messages?${query}`);
      expect([res.status, fields(res.body)], query).toEqual([400, [field]]);
    }
    const bad = await get("/api/rooms/a.b/messages");
    expect([bad.status, fields(bad.body)]).toEqual([400, ["room"]]);
    // A bad room id touches nothing.
    expect(await get(`/api/rooms/${r}/messages`)).toMatchObject({ status: 200, body: { messages: [], hasMore: false } });
  });

  it("answers 404 in text for unknown paths and 405 in JSON for wrong methods", async () => {
    // (`/` is the page: tests/it/neutral/web_access.)
    for (const path of ["/api/rooms/r1", "/api/rooms/r1/nothing", "/api/rooms/a/b/message", "/agents/other/r1"]) {
      const res = await call("GET", path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type"), path).toMatch(/^text\/plain/);
    }
    for (const [method, path] of [
      ["GET", "/api/rooms/r1/message"],
      ["PUT", "/api/rooms/r1/sandbox/exec"],
      ["DELETE", "/api/rooms/r1/cleanup"],
      ["POST", "/api/rooms/r1/messages"],
      ["POST", "/health"],
      ["POST", "/api/rooms/r1/ws"],
      ["POST", "/api/rooms/r1/files/a.txt"],
    ]) {
      const res = await call(method, path);
      expect([res.status, res.body], `${method} ${path}`).toEqual([405, { error: "method not allowed" }]);
    }
  });

  it("answers 413 to bodies over one mebibyte, declared or streamed", async () => {
    const r = room();
    const big = `{"text":"${"a".repeat(1024 * 1024 + 1)}"}`;
    expect(await post(`/api/rooms/${r}/message`, big)).toMatchObject({ status: 413, body: { error: "body too large" } });
    const bytes = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.slice(i, i + 64 * 1024));
        controller.close();
      },
    });
    const res = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/sandbox/exec`, {
      method: "POST",
      headers: { authorization: "Bearer test-token" },
      body: stream,
    });
    expect([res.status, await res.json()]).toEqual([413, { error: "body too large" }]);
    expect((await get(`/api/rooms/${r}/messages`)).body.messages).toEqual([]);
  });

  it("pages messages backwards, oldest first", async () => {
    const r = room("p");
    // A model error answers each message: two messages per question.
    for (const n of [1, 2, 3]) expect((await post(`/api/rooms/${r}/message`, { text: `m${n}` })).status).toBe(200);
    const all = (await get(`/api/rooms/${r}/messages`)).body;
    const ids: string[] = all.messages.map((m: any) => m.id);
    expect(ids).toEqual(["000000000001", "000000000002", "000000000003", "000000000004", "000000000005", "000000000006"]);
    expect(all.hasMore).toBe(false);
    const newest = (await get(`/api/rooms/${r}/messages?limit=4`)).body;
    expect(newest.messages.length).toBe(4);
    expect(newest.messages[0].id).toBe(ids[2]);
    expect(newest.hasMore).toBe(true);
    const older = (await get(`/api/rooms/${r}/messages?before=${ids[2]}&limit=4`)).body;
    expect(older).toEqual({ messages: [all.messages[0], all.messages[1]], hasMore: false });
  });

  it("answers cancel, interrupt and cleanup when idle, and never reuses ids", async () => {
    const r = room("c");
    expect(await post(`/api/rooms/${r}/cancel`, {})).toMatchObject({ status: 200, body: { cancelled: false } });
    expect(await post(`/api/rooms/${r}/cancel`, { turnId: "t1", userId: "ada" })).toMatchObject({
      status: 200,
      body: { cancelled: false },
    });
    expect(await post(`/api/rooms/${r}/sandbox/interrupt`, {})).toMatchObject({ status: 200, body: { interrupted: false } });
    await post(`/api/rooms/${r}/message`, { text: "before" });
    // An empty body counts as {}.
    const cleaned = await call("POST", `/api/rooms/${r}/cleanup`);
    expect([cleaned.status, cleaned.body]).toEqual([200, { cleaned: true, roomId: r }]);
    // The emptied room holds who cleaned it up, and nothing else.
    const left = (await get(`/api/rooms/${r}/messages`)).body.messages;
    expect(left.map((m: { id: string; event: unknown }) => [m.id, m.event])).toEqual([
      ["000000000003", { kind: "cleanup", by: "anonymous" }],
    ]);
    const after = await post(`/api/rooms/${r}/message`, { text: "after" });
    expect(after.body.messages[1].id).toBe("000000000004");
  });

  it("refuses a plain GET on a socket path, and a bad room or user before the upgrade", async () => {
    const plain = await get("/api/rooms/r1/ws");
    expect(plain.status).toBe(400);
    expect(Object.keys(plain.body.details)).toEqual(["upgrade"]);
    for (const path of ["/api/rooms/-x/ws", `/api/rooms/r1/ws?user=${"x".repeat(33)}`, "/agents/duet-agent/a.b", "/api/rooms/r1/ws?_pk="]) {
      const res = await openSocket(path);
      expect(res.status, path).toBe(400);
    }
  });
});
