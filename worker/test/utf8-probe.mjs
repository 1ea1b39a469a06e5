// What workerd does with a WebSocket text frame that is not valid UTF-8
// (issue 10, item 5), measured against a running worker: the frames of the
// Workers test pool never cross a real wire (a test's WebSocket can only
// send valid strings), so this probe speaks raw WebSocket over TCP instead.
// It sends a valid frame, then an invalid one, and prints what came back: a
// close frame and its code, other frames, or the connection dropping.
//
//   node test/utf8-probe.mjs http://127.0.0.1:PORT [TOKEN]   # e.g. worker/dev.sh's
import { randomBytes } from "node:crypto";
import { connect } from "node:net";

const [base = "http://127.0.0.1:8787", token = ""] = process.argv.slice(2);
const url = new URL(`/api/rooms/utf8probe/ws?user=probe${token ? `&token=${token}` : ""}`, base);

/** A masked client frame with a short payload. */
function frame(opcode, payload) {
  const mask = randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | payload.length]), mask, body]);
}

/** The server's (unmasked) frames in `buf`. */
function frames(buf) {
  const out = [];
  let at = 0;
  while (at + 2 <= buf.length) {
    const op = buf[at] & 0x0f;
    let len = buf[at + 1] & 0x7f;
    let start = at + 2;
    if (len === 126) {
      len = buf.readUInt16BE(at + 2);
      start += 2;
    } else if (len === 127) {
      len = Number(buf.readBigUInt64BE(at + 2));
      start += 8;
    }
    if (start + len > buf.length) break;
    out.push({ op, payload: buf.subarray(start, start + len) });
    at = start + len;
  }
  return out;
}

const sock = connect(Number(url.port || 80), url.hostname);
let buf = Buffer.alloc(0);
let upgraded = false;
sock.on("connect", () => {
  sock.write(
    `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
});
sock.on("data", (d) => {
  buf = Buffer.concat([buf, d]);
  if (upgraded) return;
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return;
  console.log("handshake:", buf.subarray(0, buf.indexOf("\r\n")).toString());
  buf = buf.subarray(end + 4);
  upgraded = true;
  // A valid frame first (answered with duet_error: an unknown type), then
  // invalid UTF-8 in a frame type: a lone continuation byte and an overlong
  // encoding (its duet_error shows what the worker's code received).
  sock.write(frame(0x1, [...Buffer.from('{"type":"x"}')]));
  const bad = [...Buffer.from('{"type":"'), 0x80, 0xc0, 0xaf, ...Buffer.from('"}')];
  setTimeout(() => sock.write(frame(0x1, bad)), 500);
});
function report() {
  for (const f of frames(buf)) {
    if (f.op === 0x8) {
      const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : "(none)";
      console.log("close frame, code", code, JSON.stringify(f.payload.subarray(2).toString()));
    } else console.log("frame op", f.op, JSON.stringify(JSON.parse(f.payload.toString())).slice(0, 100));
  }
}
sock.on("close", () => {
  report();
  console.log("the TCP connection closed");
  process.exit(0);
});
sock.on("error", (e) => console.log("socket error:", e.message));
setTimeout(() => {
  report();
  console.log("still open after 5 s");
  process.exit(0);
}, 5000);
