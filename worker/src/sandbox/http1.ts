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
        if (typeof m.data !== "string") controller.enqueue(new Uint8Array(m.data as ArrayBuffer));
      });
      ws.addEventListener("close", () => {
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
      ws.addEventListener("error", () => controller.error(new Error("the tunnel broke")));
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
  let rest = buffer.subarray(end + 4);
  const code = Number(status[1]);
  const chunked = /chunked/i.test(headers.get("transfer-encoding") ?? "");
  const length = headers.has("content-length") ? Number(headers.get("content-length")) : undefined;
  headers.delete("transfer-encoding");
  headers.delete("connection");
  const empty = request.method === "HEAD" || code === 204 || code === 304 || (code >= 100 && code < 200);
  if (empty) {
    void reader.cancel().catch(() => {});
    return new Response(null, { status: code, statusText: status[2] ?? "", headers });
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
  return new Response(stream, { status: code, statusText: status[2] ?? "", headers });
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
