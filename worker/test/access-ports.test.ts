// Roles at a port (docs/protocol.md "Invites, roles and approvals", "Ports"):
// a viewer's preview is GET and HEAD only and stops working once the invite
// is revoked; tunnels are for writers.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ORIGIN, call, get, post, room, sleep, type Json } from "./support";

async function serve(r: string, port: number): Promise<void> {
  expect((await call("PUT", `/api/rooms/${r}/files/site/hi.txt`, "hi\n")).status).toBe(200);
  expect((await post(`/api/rooms/${r}/processes`, { cmd: `cd site && python3 -m http.server ${port} --bind 127.0.0.1` })).status).toBe(200);
  const deadline = Date.now() + 40_000;
  while (!(await get(`/api/rooms/${r}/ports`)).body.ports.some((p: Json) => p.port === port)) {
    if (Date.now() > deadline) throw new Error(`port ${port} never listed`);
    await sleep(200);
  }
}

function fetchRaw(path: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(ORIGIN + path, { redirect: "manual", ...init });
}

describe("roles at a port", () => {
  it("lets a viewer GET a preview, and nothing more", async () => {
    const r = room("vport");
    await serve(r, 8401);
    const viewer = (await post(`/api/rooms/${r}/invites`, { role: "viewer" })).body;
    const writer = (await post(`/api/rooms/${r}/invites`, { role: "writer" })).body;
    const page = `/api/rooms/${r}/ports/8401/hi.txt`;
    const read = await fetchRaw(page, { headers: { authorization: `Bearer ${viewer.token}` } });
    expect([read.status, await read.text()]).toEqual([200, "hi\n"]);
    const posted = await fetchRaw(page, { method: "POST", headers: { authorization: `Bearer ${viewer.token}` }, body: "x" });
    expect(posted.status).toBe(403);
    expect(await posted.json()).toEqual({ error: "forbidden", details: { role: ["a viewer may not send requests to the sandbox's ports"] } });
    // A writer's POST reaches the app (which does not take POSTs).
    const byWriter = await fetchRaw(page, { method: "POST", headers: { authorization: `Bearer ${writer.token}` }, body: "x" });
    expect(byWriter.status).toBe(501);
    // A browser is not served on the Worker's origin (no DUET_PREVIEW_HOST here).
    expect((await fetchRaw(`${page}?token=${viewer.token}`)).status).toBe(403);
    // Tunnels are for writers.
    const tunnel = await fetchRaw(`/api/rooms/${r}/tunnel/8401?token=${viewer.token}`, { headers: { Upgrade: "websocket" } });
    expect(tunnel.status).toBe(403);
    const writerTunnel = await fetchRaw(`/api/rooms/${r}/tunnel/8401?token=${writer.token}`, { headers: { Upgrade: "websocket" } });
    expect(writerTunnel.status).toBe(101);
    writerTunnel.webSocket?.accept();
    writerTunnel.webSocket?.close();
    // Revoked: the token stops working at once.
    expect((await call("DELETE", `/api/rooms/${r}/invites/${viewer.invite.id}`)).status).toBe(200);
    expect((await fetchRaw(page, { headers: { authorization: `Bearer ${viewer.token}` } })).status).toBe(401);
  });
});
