// A port's tunnel (docs/protocol.md "Ports"): a WebSocket whose binary
// frames are the bytes of one TCP connection to a port inside the sandbox.
// The sandbox's Durable Object serves it at TUNNEL_PATH{port} (an upgrade
// of its `fetch`): the production class over workerd's raw TCP to its
// container, the stand-in over `duet serve`'s own tunnel. Either way the
// client's bytes are paced to the tunnel's rate: a WebSocket cannot be
// read more slowly here, so they wait (in order, none dropped) before
// they are passed on.

/** The path of the sandbox object's tunnel upgrade; `?rate=` bytes a second. */
export const TUNNEL_PATH = "/duet/tunnel/";

/** Waits so that the bytes passed on stay within `rate` a second (a burst up to one second's worth). */
export class Pacer {
  private available: number;
  private at = Date.now();

  constructor(private readonly rate: number) {
    this.available = rate;
  }

  /** Resolves when `bytes` more may go. */
  async take(bytes: number): Promise<void> {
    if (!Number.isFinite(this.rate)) return;
    const now = Date.now();
    this.available = Math.min(this.rate, this.available + ((now - this.at) * this.rate) / 1000);
    this.at = now;
    this.available -= bytes;
    if (this.available < 0) await new Promise((ok) => setTimeout(ok, Math.ceil((-this.available * 1000) / this.rate)));
  }
}

/** The client's end of a new tunnel, and the server end (accepted, bytes as ArrayBuffers). */
function pair(): [WebSocket, WebSocket] {
  const [client, server] = Object.values(new WebSocketPair());
  server.accept();
  server.binaryType = "arraybuffer";
  return [client, server];
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closed
  }
}

/** The 101 answer of a tunnel over raw TCP `socket` (already open); `activity` on each byte moved. */
export function tunnelOverSocket(socket: Socket, rate: number, activity: () => void): Response {
  const [client, server] = pair();
  const pacer = new Pacer(rate);
  const writer = socket.writable.getWriter();
  let writes = Promise.resolve();
  let over = false;
  const end = (code: number, reason: string) => {
    if (over) return;
    over = true;
    closeQuietly(server, code, reason);
    void writes.finally(() => socket.close().catch(() => {}));
  };
  server.addEventListener("message", (m) => {
    if (over) return;
    if (typeof m.data === "string") return end(1003, "a tunnel carries binary frames only");
    const bytes = new Uint8Array(m.data as ArrayBuffer);
    writes = writes.then(async () => {
      await pacer.take(bytes.byteLength);
      activity();
      await writer.write(bytes);
    });
    writes.catch(() => end(1011, "the port's connection broke"));
  });
  server.addEventListener("close", () => end(1000, "closed"));
  server.addEventListener("error", () => end(1011, "the tunnel broke"));
  void (async () => {
    const reader = socket.readable.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        activity();
        server.send(value);
      }
      end(1000, "the port closed the connection");
    } catch {
      end(1011, "the port's connection broke");
    }
  })();
  return new Response(null, { status: 101, webSocket: client });
}

/** The 101 answer of a tunnel relayed to `upstream`, another tunnel's socket (accepted). */
export function tunnelOverWebSocket(upstream: WebSocket, rate: number, activity: () => void): Response {
  const [client, server] = pair();
  upstream.binaryType = "arraybuffer";
  const pacer = new Pacer(rate);
  let sends = Promise.resolve();
  let over = false;
  const end = (code: number, reason: string) => {
    if (over) return;
    over = true;
    closeQuietly(server, code, reason);
    void sends.finally(() => closeQuietly(upstream, 1000, "closed"));
  };
  server.addEventListener("message", (m) => {
    if (over) return;
    if (typeof m.data === "string") return end(1003, "a tunnel carries binary frames only");
    const bytes = m.data as ArrayBuffer;
    sends = sends.then(async () => {
      await pacer.take(bytes.byteLength);
      activity();
      upstream.send(bytes);
    });
    sends.catch(() => end(1011, "the port's connection broke"));
  });
  upstream.addEventListener("message", (m) => {
    if (over || typeof m.data === "string") return;
    activity();
    server.send(m.data as ArrayBuffer);
  });
  upstream.addEventListener("close", (e) => end(e.code === 1000 ? 1000 : 1011, "the port closed the connection"));
  upstream.addEventListener("error", () => end(1011, "the port's connection broke"));
  server.addEventListener("close", () => end(1000, "closed"));
  server.addEventListener("error", () => end(1011, "the tunnel broke"));
  return new Response(null, { status: 101, webSocket: client });
}
