// Files in and out of a room's workspace through the Worker, the stand-in
// and the real sandbox: the path rules, 404 in text, 413 beyond 64 MiB.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ORIGIN, TOKEN, call, post, room } from "./support";

const auth = { authorization: `Bearer ${TOKEN}` };

async function put(r: string, path: string, body: BodyInit) {
  const res = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/files/${path}`, { method: "PUT", headers: auth, body });
  return { status: res.status, body: await res.text(), type: res.headers.get("content-type") };
}

async function fetchFile(r: string, path: string) {
  const res = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/files/${path}`, { headers: auth });
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), type: res.headers.get("content-type") };
}

describe("files", () => {
  it("round-trip through the workspace, creating folders", async () => {
    const r = room("f");
    const bytes = new Uint8Array([0, 1, 2, 255, 10]);
    const res = await put(r, "src/deep/a.bin", bytes);
    expect([res.status, JSON.parse(res.body)]).toEqual([200, { path: "src/deep/a.bin", size: 5 }]);
    const got = await fetchFile(r, "src/deep/a.bin");
    expect(got.status).toBe(200);
    expect(got.type).toBe("application/octet-stream");
    expect([...got.bytes]).toEqual([...bytes]);
    const ls = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "od -An -tu1 src/deep/a.bin" });
    expect(ls.body.result.stdout.trim().split(/\s+/)).toEqual(["0", "1", "2", "255", "10"]);
    // Percent-encoded names arrive decoded.
    expect((await put(r, "with%20space.txt", "x")).status).toBe(200);
    expect((await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "cat 'with space.txt'" })).body.result.stdout).toBe("x");
  });

  it("answers 404 in text for an absent file", async () => {
    const res = await call("GET", `/api/rooms/${room("f")}/files/nope.txt`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
  });

  it("refuses paths that leave the workspace, and symlinks, with details.path", async () => {
    const r = room("f");
    for (const path of ["%2Fetc%2Fpasswd", "a/%2E%2E%2F%2E%2E%2Fx", "%00"]) {
      const res = await put(r, path, "x");
      expect(res.status, path).toBe(400);
      expect(Object.keys(JSON.parse(res.body).details), path).toEqual(["path"]);
    }
    const both = await put("bad!room", "%2Fx", "x");
    expect(Object.keys(JSON.parse(both.body).details)).toEqual(["path", "room"]);
    await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "ln -s / evil" });
    const res = await fetchFile(r, "evil/etc/hostname");
    expect(res.status).toBe(400);
    expect(Object.keys(JSON.parse(new TextDecoder().decode(res.bytes)).details)).toEqual(["path"]);
  });

  it("answers 413 beyond 64 MiB", async () => {
    const big = new Uint8Array(64 * 1024 * 1024 + 1);
    const res = await put(room("f"), "big.bin", big);
    expect([res.status, JSON.parse(res.body)]).toEqual([413, { error: "body too large" }]);
  });
});
