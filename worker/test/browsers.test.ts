// Browsers cannot reach in (docs/protocol.md "Browsers"; tests/it/server/server_browsers.rs):
// a request or socket upgrade with an `Origin` is refused with 403 before the
// token is looked at, unless it is the Worker's own origin (Duet's page) or
// DUET_ALLOW_ORIGIN (here "https://ide.example, HTTPS://Other.example/", see
// vitest.config.ts) names it.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ORIGIN, TOKEN, get, room } from "./support";

/** A page's `fetch` with a text/plain body (no CORS preflight needed). */
async function pagePost(path: string, origin: string, token: string | null = TOKEN) {
  const headers: Record<string, string> = { origin, "content-type": "text/plain" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await SELF.fetch(ORIGIN + path, { method: "POST", headers, body: '{"cmd":"echo pwned > /workspace/pwned"}' });
  return { status: res.status, body: await res.json<any>() };
}

async function upgrade(path: string, headers: Record<string, string>): Promise<number> {
  const res = await SELF.fetch(`${ORIGIN}${path}`, { headers: { Upgrade: "websocket", ...headers } });
  res.webSocket?.accept();
  res.webSocket?.close(1000, "bye");
  return res.status;
}

describe("browsers", () => {
  it("refuses a web page's request and socket with 403, before the token", async () => {
    const r = room("web");
    for (const origin of ["https://evil.example", "null", "https://duet.test", "http://duet.test:8787", "https://ide.example.evil.example"]) {
      const { status, body } = await pagePost(`/api/rooms/${r}/sandbox/exec`, origin);
      expect(status, origin).toBe(403);
      expect(Object.keys(body)).toEqual(["error", "details"]);
      expect(body.error).toBe("forbidden");
      expect(Object.keys(body.details)).toEqual(["origin"]);
      expect(body.details.origin[0]).toContain("DUET_ALLOW_ORIGIN");
    }
    // Without a token, or with a wrong one: still 403, not 401.
    expect((await pagePost(`/api/rooms/${r}/sandbox/exec`, "https://evil.example", null)).status).toBe(403);
    expect((await pagePost(`/api/rooms/${r}/message`, "https://evil.example", "wrong")).status).toBe(403);
    for (const path of [`/api/rooms/${r}/ws?token=${TOKEN}`, `/agents/duet-agent/${r}?token=${TOKEN}`]) {
      expect(await upgrade(path, { origin: "https://evil.example" }), path).toBe(403);
    }
    const health = await SELF.fetch(`${ORIGIN}/health`, { headers: { origin: "https://evil.example" } });
    expect(health.status).toBe(403);
    await health.arrayBuffer();
    // Nothing ran.
    expect((await get(`/api/rooms/${r}/files/pwned`)).status).toBe(404);
    expect((await get(`/api/rooms/${r}/messages`)).body.messages).toEqual([]);
  });

  it("answers its own origin, Duet's page", async () => {
    const r = room("web");
    const { status, body } = await pagePost(`/api/rooms/${r}/sandbox/exec`, ORIGIN);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(await upgrade(`/api/rooms/${r}/ws?token=${TOKEN}`, { origin: ORIGIN })).toBe(101);
  });

  it("answers the origins DUET_ALLOW_ORIGIN names, in any case, and clients without Origin", async () => {
    const r = room("web");
    for (const origin of ["https://ide.example", "HTTPS://IDE.example", "https://other.example"]) {
      const { status, body } = await pagePost(`/api/rooms/${r}/sandbox/exec`, origin);
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.result.exitCode).toBe(0);
    }
    expect((await pagePost(`/api/rooms/${r}/sandbox/exec`, "https://ide.example", "wrong")).status).toBe(401);
    expect(await upgrade(`/api/rooms/${r}/ws?token=${TOKEN}`, { origin: "https://ide.example" })).toBe(101);
    expect(await upgrade(`/api/rooms/${r}/ws?token=${TOKEN}`, {})).toBe(101);
    // The allowed page's command ran.
    expect((await get(`/api/rooms/${r}/files/pwned`)).body).toBe("pwned\n");
  });
});
