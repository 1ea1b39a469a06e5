// An open channel's credential, watched to the end (docs/protocol.md
// "Invites, roles and approvals"): a tunnel or a port's preview (its
// answer's body, its WebSocket) opened with an invite ends when the invite
// is revoked, expires or loses the role the channel needs: 4401 like the
// room's sockets, 4403 for a role. The channel does not pass through the
// room's object, so the Worker asks it once a second, and ends the channel
// at the invite's expiry without asking.

import { may, type Action, type Caller } from "./access";
import type { Env } from "./env";
import { askCaller } from "./rooms";

/** How often an open channel asks whether its invite still allows it. */
const ASK_EVERY_MS = 1_000;

/** Why an open channel ended: the close code and reason. */
export interface Lost {
  code: number;
  reason: string;
}

/** The watch on one channel's credential; `stop` once the channel ended by itself. */
export interface Watch {
  lost: Promise<Lost>;
  stop(): void;
}

/** Watches `caller` in `room` for `action`; the server's token is never watched. */
export function watch(env: Env, room: string, caller: Caller, action: Action): Watch {
  const inviteId = caller.inviteId;
  if (inviteId === undefined) return { lost: new Promise(() => {}), stop() {} };
  let timer: ReturnType<typeof setInterval> | undefined;
  let expiry: ReturnType<typeof setTimeout> | undefined;
  const stop = () => {
    if (timer !== undefined) clearInterval(timer);
    if (expiry !== undefined) clearTimeout(expiry);
    timer = expiry = undefined;
  };
  const expired = () => caller.expiresAt !== undefined && Date.now() >= caller.expiresAt;
  const lost = new Promise<Lost>((resolve) => {
    const end = (l: Lost) => {
      stop();
      resolve(l);
    };
    if (caller.expiresAt !== undefined) {
      expiry = setTimeout(() => end({ code: 4401, reason: "the invite expired" }), Math.max(0, caller.expiresAt - Date.now()));
    }
    let asking = false;
    timer = setInterval(() => {
      if (asking) return;
      asking = true;
      askCaller(env, room, { inviteId })
        .then((now) => {
          if (now === undefined) end({ code: 4401, reason: expired() ? "the invite expired" : "the invite was revoked" });
          else if (!may(now.role, action)) end({ code: 4403, reason: now.role === "viewer" ? "the invite's role is viewer now" : "the invite's role changed" });
        })
        .catch(() => {
          // The room did not answer: ask again at the next tick.
        })
        .finally(() => {
          asking = false;
        });
    }, ASK_EVERY_MS);
  });
  return { lost, stop };
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closed
  }
}

/** A code `close()` may send for `code` received (1005/1006 and others reserved are not sendable). */
function sendable(code: number): number {
  return code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1000;
}

/**
 * `res` with its channel cut when `w.lost` comes first: a WebSocket (101)
 * is relayed through a pair of the Worker's and closed with the lost
 * code; any other answer's body is broken off. Other answers are as they were.
 */
export function guarded(res: Response, w: Watch): Response {
  const upstream = res.webSocket;
  if (res.status === 101 && upstream) return guardedSocket(res, upstream, w);
  if (res.body === null) {
    w.stop();
    return res;
  }
  const reader = res.body.getReader();
  let cut = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      void w.lost.then((l) => {
        cut = true;
        controller.error(new Error(l.reason));
        void reader.cancel(l.reason).catch(() => {});
      });
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (cut) return;
      if (done) {
        w.stop();
        controller.close();
      } else controller.enqueue(value);
    },
    cancel(reason) {
      w.stop();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function guardedSocket(res: Response, upstream: WebSocket, w: Watch): Response {
  const [client, server] = Object.values(new WebSocketPair());
  server.accept();
  upstream.accept();
  server.binaryType = upstream.binaryType = "arraybuffer";
  let over = false;
  const end = (toClient: [number, string], toUpstream: [number, string]) => {
    if (over) return;
    over = true;
    w.stop();
    closeQuietly(server, ...toClient);
    closeQuietly(upstream, ...toUpstream);
  };
  server.addEventListener("message", (m) => {
    if (!over) upstream.send(m.data);
  });
  upstream.addEventListener("message", (m) => {
    if (!over) server.send(m.data);
  });
  upstream.addEventListener("close", (e) => end([sendable(e.code), e.reason], [1000, "closed"]));
  server.addEventListener("close", (e) => end([1000, "closed"], [sendable(e.code), e.reason]));
  upstream.addEventListener("error", () => end([1011, "the port's connection broke"], [1011, "broke"]));
  server.addEventListener("error", () => end([1011, "broke"], [1011, "the client's connection broke"]));
  void w.lost.then((l) => end([l.code, l.reason], [1000, "closed"]));
  return new Response(null, { status: 101, webSocket: client, headers: res.headers });
}
