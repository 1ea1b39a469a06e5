// The client side of the Sandbox SDK's PTY WebSocket (what `terminal()`
// answers; the container's pty-ws-handler, SDK 0.12.10): output comes as
// binary frames (first the PTY's buffered output), input goes as binary
// frames, resize as the text frame `{"type":"resize","cols","rows"}`;
// status comes as text frames `ready`, `error {message}` and `exit {code,
// signal?}`. The room's object holds the socket as a client; a socket that
// closes ends the terminal for the room.

import type { Pty, PtyEvents, TermSize } from "./types";

/**
 * Holds the socket of a `terminal()` answer, resolved once the PTY is
 * `ready` (an `error` or a close before that rejects); `end` ends the
 * terminal's processes in the sandbox.
 */
export function ptyOverSocket(res: Response, events: PtyEvents, end: () => Promise<void>): Promise<Pty> {
  const ws = res.webSocket;
  if (!ws) return Promise.reject(new Error(`the sandbox did not open a terminal (${res.status})`));
  ws.accept();
  // Binary frames as bytes, not Blobs (the default of newer compatibility dates).
  ws.binaryType = "arraybuffer";
  let ready = false;
  let over = false;
  let failure = "the terminal closed before it was ready";
  const pty: Pty = {
    write(bytes: Uint8Array) {
      if (!over) ws.send(bytes);
    },
    resize(size: TermSize) {
      if (!over) ws.send(JSON.stringify({ type: "resize", cols: size.cols, rows: size.rows }));
    },
    async close() {
      over = true;
      try {
        ws.close(1000, "closed");
      } catch {
        // already closed
      }
      await end();
    },
  };
  return new Promise<Pty>((resolve, reject) => {
    const finish = (code: number | null, reason?: string) => {
      if (over) return;
      over = true;
      if (ready) events.onExit(code, reason);
      else reject(new Error(failure));
    };
    ws.addEventListener("message", (m) => {
      if (over) return;
      if (typeof m.data !== "string") {
        events.onData(new Uint8Array(m.data as ArrayBuffer));
        return;
      }
      let status: { type?: unknown; code?: unknown; message?: unknown };
      try {
        status = JSON.parse(m.data) as typeof status;
      } catch {
        return;
      }
      if (status.type === "ready" && !ready) {
        ready = true;
        resolve(pty);
      } else if (status.type === "exit") {
        finish(typeof status.code === "number" ? status.code : null);
        ws.close(1000, "the terminal ended");
      } else if (status.type === "error") {
        failure = String(status.message);
        if (ready) console.error(`the room's terminal: ${failure}`);
      }
    });
    // Closed without an `exit`: the terminal is gone, and the room is told why.
    const lost = "the terminal's connection to the sandbox was lost";
    ws.addEventListener("close", () => finish(null, lost));
    ws.addEventListener("error", () => finish(null, lost));
  });
}
