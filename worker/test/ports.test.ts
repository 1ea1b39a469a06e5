// Ports through the worker (docs/protocol.md "Ports"): `python3 -m
// http.server` as a background process, the room's `ports`, its HTTP
// preview (the 308, the headers the app sees and those it never sees, the
// 502 and 400), browsers refused on the Worker's origin, and the tunnel
// carrying a raw HTTP exchange.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { concatBytes } from "../src/sandbox/bytes";
import { PORTS_COMMAND, listeningPorts } from "../src/sandbox/signal";
import { ORIGIN, TOKEN, call, get, joined, post, room, sleep, type Json } from "./support";

const WAIT_MS = 40_000;

/** An app that answers every request with what it saw, as JSON. */
const ECHO_APP = `
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_POST = do_GET
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`;

/** A WebSocket app (stdlib only) that answers each text frame with "echo:" and the text. */
const WS_APP = `
import socket, hashlib, base64, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
def serve(c):
    data = b""
    while b"\\r\\n\\r\\n" not in data:
        data += c.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in data.split(b"\\r\\n") if l.lower().startswith(b"sec-websocket-key")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + b"\\r\\n\\r\\n")
    def read(n):
        b = b""
        while len(b) < n:
            x = c.recv(n - len(b))
            if not x:
                raise EOFError
            b += x
        return b
    while True:
        h = read(2)
        op, n = h[0] & 15, h[1] & 127
        if n == 126:
            n = int.from_bytes(read(2), "big")
        mask = read(4) if h[1] & 128 else b"\\0\\0\\0\\0"
        p = bytes(b ^ mask[i % 4] for i, b in enumerate(read(n)))
        if op == 8:
            c.sendall(b"\\x88\\x00")
            return
        out = b"echo:" + p
        c.sendall(bytes([0x80 | op, len(out)]) + out)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

async function put(r: string, path: string, text: string): Promise<void> {
  const res = await call("PUT", `/api/rooms/${r}/files/${path}`, text, { authorization: `Bearer ${TOKEN}` });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** Starts `cmd` and waits until the room lists `port`. */
async function serve(r: string, cmd: string, port: number): Promise<Json> {
  const res = await post(`/api/rooms/${r}/processes`, { cmd });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const ports = (await get(`/api/rooms/${r}/ports`)).body.ports as Json[];
    const found = ports.find((p) => p.port === port);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`port ${port} never listed: ${JSON.stringify(ports)}`);
    await sleep(200);
  }
}

function fetchRaw(path: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(ORIGIN + path, { redirect: "manual", ...init });
}

const bearer = { authorization: `Bearer ${TOKEN}` };

describe("ports", () => {
  it("lists a listening port, with a state patch, and serves its files through the preview", async () => {
    const r = room("Port");
    const s = await joined(r, "deltas=1");
    await put(r, "site/hello.txt", "hello from the sandbox\n");
    const port = await serve(r, "cd site && python3 -m http.server 8301 --bind 127.0.0.1", 8301);
    expect(port).toEqual({ port: 8301, path: `/api/rooms/${r}/ports/8301/` });
    const patch = await s.until((f) => f.type === "duet_state" && f.patch.ports !== undefined && f.patch.ports.length > 0);
    expect(patch.patch.ports).toEqual([port]);
    // What a real container's look reads: the kernel's own tables.
    const table = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: PORTS_COMMAND });
    expect(listeningPorts(table.body.result.stdout)).toEqual([8301]);
    const file = await fetchRaw(`/api/rooms/${r}/ports/8301/hello.txt`, { headers: bearer });
    expect(file.status).toBe(200);
    expect(await file.text()).toBe("hello from the sandbox\n");
    // The bare port answers 308 to its slash, query kept.
    const bare = await fetchRaw(`/api/rooms/${r}/ports/8301?a=1`, { headers: bearer });
    expect(bare.status).toBe(308);
    expect(new URL(bare.headers.get("location") ?? "", ORIGIN).pathname + new URL(bare.headers.get("location") ?? "", ORIGIN).search).toBe(
      `/api/rooms/${r}/ports/8301/?a=1`,
    );
    // Its log is the server's.
    const list = (await get(`/api/rooms/${r}/processes`)).body.processes as Json[];
    const logged = Date.now() + WAIT_MS;
    while (!(await get(`/api/rooms/${r}/processes/${list[0].id}/logs`)).body.stderr.includes("GET /hello.txt")) {
      if (Date.now() > logged) throw new Error("the server's log never showed the request");
      await sleep(200);
    }
    // Killed: the port goes from the list.
    expect((await call("DELETE", `/api/rooms/${r}/processes/${list[0].id}`)).body).toEqual({ killed: true });
    const deadline = Date.now() + WAIT_MS;
    while ((await get(`/api/rooms/${r}/ports`)).body.ports.length > 0) {
      if (Date.now() > deadline) throw new Error("the port stayed listed");
      await sleep(200);
    }
    const gone = await fetchRaw(`/api/rooms/${r}/ports/8301/hello.txt`, { headers: bearer });
    expect(gone.status).toBe(502);
    expect(await gone.json()).toEqual({ error: "nothing listens on port 8301 in the sandbox" });
  });

  it("forwards no credential and tells the app where it lives", async () => {
    const r = room("Port");
    await put(r, "echo.py", ECHO_APP);
    await serve(r, "python3 echo.py 8302", 8302);
    const res = await fetchRaw(`/api/rooms/${r}/ports/8302/a/b?x=1&token=${TOKEN}&y=2`, {
      headers: { ...bearer, cookie: "duet_preview=abc; theme=dark", "x-app": "kept" },
    });
    // A client with the bearer token: a token in the query is taken off.
    expect(res.status).toBe(200);
    expect(((await res.json()) as Json).path).toBe("/a/b?x=1&y=2");
    const seen = await fetchRaw(`/api/rooms/${r}/ports/8302/a/b?x=1&y=2`, {
      headers: { ...bearer, cookie: "duet_preview=abc; theme=dark", "x-app": "kept" },
    });
    expect(seen.status).toBe(200);
    const body = (await seen.json()) as Json;
    expect(body.path).toBe("/a/b?x=1&y=2");
    expect(body.headers.authorization).toBeUndefined();
    expect(body.headers.cookie).toBe("theme=dark");
    expect(body.headers["x-app"]).toBe("kept");
    expect(body.headers.host).toBe("localhost:8302");
    expect(body.headers["x-forwarded-prefix"]).toBe(`/api/rooms/${r}/ports/8302`);
    expect(body.headers["x-forwarded-host"]).toBe(new URL(ORIGIN).host);
  });

  it("serves no app to a browser on the Worker's own origin", async () => {
    const r = room("Port");
    await put(r, "echo.py", ECHO_APP);
    await serve(r, "python3 echo.py 8303", 8303);
    const browser = { origin: "http://localhost:8303", "user-agent": "a browser" };
    expect((await fetchRaw(`/api/rooms/${r}/ports/8303/`)).status).toBe(401);
    expect((await fetchRaw(`/api/rooms/${r}/ports/8303/?token=wrong`)).status).toBe(401);
    // A page, a form, a page's fetch: without DUET_PREVIEW_HOST the port has
    // no origin of its own, so a browser is refused (403), never served.
    for (const [path, init] of [
      [`/api/rooms/${r}/ports/8303/page?q=1&token=${TOKEN}`, {}],
      [`/api/rooms/${r}/ports/8303/?%74oken=${TOKEN}`, { headers: { "sec-fetch-mode": "navigate" } }],
      [`/api/rooms/${r}/ports/8303/form?token=${TOKEN}&a=1`, { method: "POST", body: "x=1" }],
      [`/api/rooms/${r}/ports/8303/page`, { headers: { ...bearer, ...browser } }],
      [`/api/rooms/${r}/ports/8303/page`, { headers: { ...bearer, "sec-fetch-site": "same-origin" } }],
    ] as [string, RequestInit][]) {
      const res = await fetchRaw(path, init);
      expect(res.status, path).toBe(403);
      expect(Object.keys(((await res.json()) as Json).details), path).toEqual(["origin"]);
    }
    // A client with the token is served, with the app's cookies kept to its host.
    const page = await fetchRaw(`/api/rooms/${r}/ports/8303/page?q=1`, { headers: bearer });
    expect(page.status).toBe(200);
    // A page of the app that calls Duet's API is refused like any browser.
    const fromApp = await fetchRaw(`/api/rooms/${r}/processes`, { headers: { ...bearer, origin: "http://localhost:8303" } });
    expect(fromApp.status).toBe(403);
  });

  it("carries a WebSocket upgrade to the app", async () => {
    const r = room("Port");
    await put(r, "ws.py", WS_APP);
    await serve(r, "python3 ws.py 8306", 8306);
    const res = await fetchRaw(`/api/rooms/${r}/ports/8306/socket`, { headers: { ...bearer, upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    ws.accept();
    const answer = new Promise<string>((ok) => ws.addEventListener("message", (m) => ok(String(m.data))));
    ws.send("hi");
    expect(await answer).toBe("echo:hi");
    ws.close(1000, "bye");
  });

  it("answers 400 for a bad port and 502 where nothing listens", async () => {
    const r = room("Port");
    for (const bad of ["0", "65536", "http", "-1"]) {
      const res = await fetchRaw(`/api/rooms/${r}/ports/${bad}/`, { headers: bearer });
      expect(res.status, bad).toBe(400);
      expect(Object.keys(((await res.json()) as Json).details)).toEqual(["port"]);
    }
    const none = await fetchRaw(`/api/rooms/${r}/ports/8399/`, { headers: bearer });
    expect(none.status).toBe(502);
    expect(await none.json()).toEqual({ error: "nothing listens on port 8399 in the sandbox" });
    const tunnel = await fetchRaw(`/api/rooms/${r}/tunnel/8399`, { headers: { ...bearer, upgrade: "websocket" } });
    expect(tunnel.status).toBe(502);
    expect((await fetchRaw(`/api/rooms/${r}/tunnel/8399`, { headers: { upgrade: "websocket" } })).status).toBe(401);
  });

  it("carries a TCP connection over the tunnel: an HTTP exchange, then 1000 when the port closes it", async () => {
    const r = room("Port");
    await put(r, "site/data.txt", "tunnelled bytes\n");
    await serve(r, "cd site && python3 -m http.server 8305 --bind 127.0.0.1", 8305);
    const res = await fetchRaw(`/api/rooms/${r}/tunnel/8305?token=${TOKEN}`, { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    ws.accept();
    ws.binaryType = "arraybuffer";
    const chunks: Uint8Array[] = [];
    const closed = new Promise<number>((ok) => ws.addEventListener("close", (e) => ok(e.code)));
    ws.addEventListener("message", (m) => {
      expect(typeof m.data).not.toBe("string");
      chunks.push(new Uint8Array(m.data as ArrayBuffer));
    });
    ws.send(new TextEncoder().encode("GET /data.txt HTTP/1.0\r\nHost: x\r\n\r\n"));
    expect(await closed).toBe(1000);
    const text = new TextDecoder().decode(concatBytes(chunks));
    expect(text).toMatch(/^HTTP\/1\.0 200/);
    expect(text.endsWith("\r\n\r\ntunnelled bytes\n")).toBe(true);
    // A text frame ends a tunnel with 1003.
    const again = await fetchRaw(`/api/rooms/${r}/tunnel/8305`, { headers: { ...bearer, upgrade: "websocket" } });
    const ws2 = again.webSocket as WebSocket;
    ws2.accept();
    const code = new Promise<number>((ok) => ws2.addEventListener("close", (e) => ok(e.code)));
    ws2.send("text");
    expect(await code).toBe(1003);
  });
});

