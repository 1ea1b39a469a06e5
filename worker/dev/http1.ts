// One HTTP/1.1 exchange over a byte stream (a tunnel's bytes): the
// stand-in's `containerFetch`, which reaches a port of `duet serve`'s
// sandbox through its tunnel so that the app sees exactly the request the
// worker made (its Host, X-Forwarded-* and no credential), as a real
// container's port would. `Connection: close`: one request per connection.

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Bytes per binary frame sent. */
const FRAME = 64 * 1024;

/** A connection's two directions. */
export interface ByteStream {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
}

/** The bytes of a WebSocket's binary frames as a ByteStream (the socket accepted). */
export function socketStream(ws: WebSocket): ByteStream {
  ws.binaryType = "arraybuffer";
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      ws.addEventListener("message", (m) => {
        if (typeof m.data === "string") return;
        try {
          controller.enqueue(new Uint8Array(m.data as ArrayBuffer));
        } catch {
          // The reader is gone (the exchange ended or was cancelled): drop it.
        }
      });
      ws.addEventListener("close", () => {
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
      ws.addEventListener("error", () => {
        try {
          controller.error(new Error("the tunnel broke"));
        } catch {
          // already closed
        }
      });
    },
  });
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      // A WebSocket message is at most 1 MiB here: the bytes go in frames of 64 KiB.
      for (let at = 0; at < chunk.length; at += FRAME) ws.send(chunk.subarray(at, at + FRAME));
    },
  });
  return { readable, writable };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function headEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i;
  }
  return -1;
}

/** Sends `request` over `conn` and answers the response, its body streamed. */
export async function http1(request: Request, conn: ByteStream): Promise<Response> {
  const url = new URL(request.url);
  const body = request.body ? new Uint8Array(await request.arrayBuffer()) : new Uint8Array(0);
  const lines = [`${request.method} ${url.pathname}${url.search} HTTP/1.1`];
  for (const [name, value] of request.headers) {
    if (["connection", "content-length", "transfer-encoding", "keep-alive"].includes(name)) continue;
    lines.push(`${name}: ${value}`);
  }
  if (!request.headers.has("host")) lines.push(`host: ${url.host}`);
  if (body.length > 0 || !["GET", "HEAD"].includes(request.method)) lines.push(`content-length: ${body.length}`);
  lines.push("connection: close", "", "");
  const writer = conn.writable.getWriter();
  await writer.write(concat(encoder.encode(lines.join("\r\n")), body));
  writer.releaseLock();

  const reader = conn.readable.getReader();
  const head = await readHead(reader);
  const { headers, code } = head;
  let rest = head.rest;
  const chunked = /chunked/i.test(headers.get("transfer-encoding") ?? "");
  const length = headers.has("content-length") ? Number(headers.get("content-length")) : undefined;
  headers.delete("transfer-encoding");
  headers.delete("connection");
  const empty = request.method === "HEAD" || code === 204 || code === 304 || (code >= 100 && code < 200);
  if (empty) {
    void reader.cancel().catch(() => {});
    return new Response(null, { status: code, statusText: head.statusText, headers });
  }
  const raw = new ReadableStream<Uint8Array>({
    start(controller) {
      if (rest.length > 0) controller.enqueue(rest);
      rest = new Uint8Array(0);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel() {
      void reader.cancel().catch(() => {});
    },
  });
  const stream = chunked ? raw.pipeThrough(dechunk()) : length !== undefined ? raw.pipeThrough(limit(length)) : raw;
  return new Response(stream, { status: code, statusText: head.statusText, headers });
}

/** A response's status line and headers, and the bytes read past them. */
async function readHead(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<{
  code: number;
  statusText: string;
  headers: Headers;
  rest: Uint8Array<ArrayBuffer>;
}> {
  let buffer: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  let end: number;
  while ((end = headEnd(buffer)) < 0) {
    const { done, value } = await reader.read();
    if (done) throw new Error("the port closed the connection before it answered");
    buffer = concat(buffer, value);
  }
  const [statusLine, ...headerLines] = decoder.decode(buffer.subarray(0, end)).split("\r\n");
  const status = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
  if (!status) throw new Error(`the port answered no HTTP: ${JSON.stringify(statusLine.slice(0, 80))}`);
  const headers = new Headers();
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return { code: Number(status[1]), statusText: status[2] ?? "", headers, rest: buffer.subarray(end + 4) };
}

/**
 * A WebSocket upgrade over `conn`: the handshake sent with the request's
 * own headers (a key of its own), then the app's frames relayed to a
 * WebSocket the 101 answer carries. Anything but 101 is answered as is.
 */
export async function websocket1(request: Request, conn: ByteStream): Promise<Response> {
  const url = new URL(request.url);
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`];
  const skip = ["connection", "upgrade", "content-length", "transfer-encoding", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"];
  for (const [name, value] of request.headers) if (!skip.includes(name)) lines.push(`${name}: ${value}`);
  if (!request.headers.has("host")) lines.push(`host: ${url.host}`);
  lines.push("connection: Upgrade", "upgrade: websocket", `sec-websocket-key: ${key}`, "sec-websocket-version: 13", "", "");
  const writer = conn.writable.getWriter();
  await writer.write(encoder.encode(lines.join("\r\n")));
  const reader = conn.readable.getReader();
  const head = await readHead(reader);
  if (head.code !== 101) {
    void reader.cancel().catch(() => {});
    return new Response(head.rest.length > 0 ? head.rest : null, { status: head.code, statusText: head.statusText, headers: head.headers });
  }
  const [client, server] = Object.values(new WebSocketPair());
  server.accept();
  server.binaryType = "arraybuffer";
  let over = false;
  const end = (code: number, reason: string) => {
    if (over) return;
    over = true;
    try {
      server.close(code, reason);
    } catch {
      // already closed
    }
    void reader.cancel().catch(() => {});
    void writer.close().catch(() => {});
  };
  let writes = Promise.resolve();
  const send = (op: number, payload: Uint8Array) => {
    writes = writes.then(() => writer.write(maskedFrame(op, payload))).catch(() => end(1011, "the app's connection broke"));
  };
  server.addEventListener("message", (m) => {
    if (typeof m.data === "string") send(1, encoder.encode(m.data));
    else send(2, new Uint8Array(m.data as ArrayBuffer));
  });
  server.addEventListener("close", (e) => {
    const code = e.code === 1005 || e.code === 1006 ? 1000 : e.code;
    send(8, new Uint8Array([code >> 8, code & 255]));
    void writes.finally(() => end(code, "closed"));
  });
  void (async () => {
    let buffer = head.rest;
    let message: Uint8Array[] = [];
    let messageOp = 0;
    try {
      for (;;) {
        const frame = takeFrame(buffer);
        if (!frame) {
          const { done, value } = await reader.read();
          if (done) return end(1000, "the app closed the connection");
          buffer = concat(buffer, value);
          continue;
        }
        buffer = frame.rest;
        if (frame.op === 8) {
          const code = frame.payload.length >= 2 ? (frame.payload[0] << 8) | frame.payload[1] : 1000;
          return end(code === 1005 || code === 1006 ? 1000 : code, decoder.decode(frame.payload.subarray(2)));
        }
        if (frame.op === 9) send(10, frame.payload);
        if (frame.op >= 8) continue;
        if (frame.op !== 0) messageOp = frame.op;
        message.push(frame.payload);
        if (!frame.fin) continue;
        const whole = message.reduce((a, b) => concat(a, b), new Uint8Array(0));
        message = [];
        server.send(messageOp === 1 ? decoder.decode(whole) : whole);
      }
    } catch {
      end(1011, "the app's connection broke");
    }
  })();
  return new Response(null, { status: 101, webSocket: client, headers: head.headers });
}

/** A client's frame (masked, as RFC 6455 wants). */
function maskedFrame(op: number, payload: Uint8Array): Uint8Array {
  const n = payload.length;
  const size = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const out = new Uint8Array(size + 4 + n);
  out[0] = 0x80 | op;
  if (n < 126) out[1] = 0x80 | n;
  else if (n < 65536) {
    out[1] = 0x80 | 126;
    out[2] = n >> 8;
    out[3] = n & 255;
  } else {
    out[1] = 0x80 | 127;
    new DataView(out.buffer).setBigUint64(2, BigInt(n));
  }
  const mask = crypto.getRandomValues(new Uint8Array(4));
  out.set(mask, size);
  for (let i = 0; i < n; i++) out[size + 4 + i] = payload[i] ^ mask[i & 3];
  return out;
}

/** The first whole frame of `bytes` (an app's: unmasked, or masked), or undefined. */
function takeFrame(bytes: Uint8Array<ArrayBuffer>): { fin: boolean; op: number; payload: Uint8Array<ArrayBuffer>; rest: Uint8Array<ArrayBuffer> } | undefined {
  if (bytes.length < 2) return undefined;
  let n = bytes[1] & 0x7f;
  let at = 2;
  if (n === 126) {
    if (bytes.length < 4) return undefined;
    n = (bytes[2] << 8) | bytes[3];
    at = 4;
  } else if (n === 127) {
    if (bytes.length < 10) return undefined;
    n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(2));
    at = 10;
  }
  const masked = (bytes[1] & 0x80) !== 0;
  const start = at + (masked ? 4 : 0);
  if (bytes.length < start + n) return undefined;
  const payload = bytes.slice(start, start + n);
  if (masked) for (let i = 0; i < n; i++) payload[i] ^= bytes[at + (i & 3)];
  return { fin: (bytes[0] & 0x80) !== 0, op: bytes[0] & 0x0f, payload, rest: bytes.subarray(start + n) };
}

/** The first `n` bytes of a stream. */
function limit(n: number): TransformStream<Uint8Array, Uint8Array> {
  let left = n;
  return new TransformStream({
    transform(chunk, controller) {
      if (left <= 0) return;
      const part = chunk.subarray(0, left);
      left -= part.length;
      controller.enqueue(part);
      if (left <= 0) controller.terminate();
    },
  });
}

/** Decodes `Transfer-Encoding: chunked`. */
function dechunk(): TransformStream<Uint8Array, Uint8Array> {
  let buffer: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  let need = -1; // bytes of the current chunk left (+2 for its CRLF); -1: reading a size line
  let finished = false;
  return new TransformStream({
    transform(chunk, controller) {
      if (finished) return;
      buffer = concat(buffer, chunk);
      for (;;) {
        if (need < 0) {
          const nl = buffer.indexOf(10);
          if (nl < 0) return;
          const size = parseInt(decoder.decode(buffer.subarray(0, nl)).split(";")[0].trim(), 16);
          buffer = buffer.subarray(nl + 1);
          if (!Number.isFinite(size) || size === 0) {
            finished = true;
            controller.terminate();
            return;
          }
          need = size + 2;
        }
        if (buffer.length === 0) return;
        const take = Math.min(need, buffer.length);
        const data = buffer.subarray(0, Math.max(0, Math.min(take, need - 2)));
        if (data.length > 0) controller.enqueue(data.slice());
        buffer = buffer.subarray(take);
        need -= take;
        if (need === 0) need = -1;
      }
    },
  });
}
