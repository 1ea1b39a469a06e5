// The floor of a message's fan-out in local workerd, beside the original
// engine's room (original.ts): a bare Durable Object, no Agents SDK, that
// builds a message's frame once and loops `ws.send` of that same string over
// its sockets (hibernatable, as the SDK's are). Nothing is stored. It answers
// the paths the benchmark's clients use (routes.ts).
// benches/engines/mod.rs measures it as engine "floor" (worker/bench/original.sh
// with bench/floor.jsonc).

import { DurableObject } from "cloudflare:workers";
import { benchFetch } from "./routes";

interface Env {
  FloorRoom: DurableObjectNamespace<FloorRoom>;
}

export class FloorRoom extends DurableObject<Env> {
  private count = 0;

  async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response("not found", { status: 404 });
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** One frame, the same string to every socket. */
  async message(userId: string, text: string): Promise<{ id: string; sockets: number }> {
    const id = `m${++this.count}`;
    const frame = JSON.stringify({ type: "duet_message", message: { id, role: "user", userId, ts: Date.now(), text } });
    const sockets = this.ctx.getWebSockets();
    for (const ws of sockets) {
      try {
        ws.send(frame);
      } catch {
        // closed meanwhile
      }
    }
    return { id, sockets: sockets.length };
  }

  webSocketMessage(): void {}

  webSocketClose(ws: WebSocket, code: number): void {
    try {
      ws.close(code === 1005 ? 1000 : code, "closed");
    } catch {
      // closed already
    }
  }
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    const room = (name: string) => env.FloorRoom.get(env.FloorRoom.idFromName(name));
    return benchFetch(request, {
      socket: (name, req) => room(name).fetch(req),
      message: (name, userId, text) => room(name).message(userId, text),
    });
  },
};
