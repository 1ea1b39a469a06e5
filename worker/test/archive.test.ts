// What only the worker's archive routes do (the rest is the neutral
// tests' tests/it/neutral/server_archive): a gzip body the platform cannot
// undo is the body's 400 with nothing written and no scratch left; other
// verbs are 405; a diff's filters are checked as paths.
import { describe, expect, it } from "vitest";
import { call, get, post, room } from "./support";
import { tarOf } from "./tars";

async function workspace(r: string): Promise<string> {
  const res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "cd /workspace && find . -mindepth 1 | LC_ALL=C sort" });
  expect(res.status).toBe(200);
  return res.body.result.stdout;
}

describe("the archive routes on the worker", () => {
  it("answer a broken gzip body with details.body, writing nothing", async () => {
    const r = room("gz");
    expect((await call("PUT", `/api/rooms/${r}/files/kept.txt`, "kept")).status).toBe(200);
    const gz = new Uint8Array(await new Response(new Blob([tarOf([{ name: "a.txt", data: "a".repeat(5000) }])]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
    const broken = gz.slice(0, gz.byteLength - 40);
    broken.set([0xde, 0xad, 0xbe, 0xef], 30);
    const res = await call("PUT", `/api/rooms/${r}/archive/?userId=ann`, broken);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.details)).toEqual(["body"]);
    expect(res.body.details.body[0]).toMatch(/^is not valid gzip/);
    expect(await workspace(r)).toBe("./kept.txt\n");
    // The same archive whole lands.
    const ok = await call("PUT", `/api/rooms/${r}/archive/?userId=ann`, gz);
    expect([ok.status, ok.body.files, ok.body.bytes]).toEqual([200, 1, 5000]);
    expect(await workspace(r)).toBe("./a.txt\n./kept.txt\n");
  });

  it("are 405 for other verbs, and a diff's path filters are the path rules'", async () => {
    const r = room("verbs");
    expect((await call("POST", `/api/rooms/${r}/archive/`, "x")).status).toBe(405);
    expect((await call("DELETE", `/api/rooms/${r}/archive/`)).status).toBe(405);
    expect((await call("PUT", `/api/rooms/${r}/diff`, "x")).status).toBe(405);
    const res = await get(`/api/rooms/${r}/diff?path=..%2Fx&path=%2Fetc`);
    expect(res.status).toBe(400);
    expect(res.body.details.path).toEqual(["must not leave /workspace (..)", "must be relative to /workspace, not absolute"]);
  });
});
