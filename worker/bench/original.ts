// The original engine's room, the baseline of the fan-out figures
// (benches/server.rs, section `original`): a bare Agents SDK `Agent` whose
// `setState` carries the message list, as the first Duet worker did. Each
// message is appended to the state; the SDK stores the whole state and
// broadcasts it (`cf_agent_state`) to every connection. It answers the
// paths the benchmark's clients use on the other backends:
//   GET  /health
//   GET  /api/rooms/{room}/ws          (WebSocket: the SDK's connection)
//   POST /api/rooms/{room}/message     {"text", "userId"}
// Nothing else of Duet: no records, no limits, no agent turn.

import { Agent, getAgentByName, routeAgentRequest } from "agents";

interface Message {
  id: string;
  role: "user";
  userId: string;
  ts: number;
  text: string;
}

interface RoomState {
  messages: Message[];
}

interface Env {
  OriginalRoom: DurableObjectNamespace<OriginalRoom>;
}

export class OriginalRoom extends Agent<Env, RoomState> {
  initialState: RoomState = { messages: [] };

  /** Appends a message to the state: the SDK stores it and sends the state to every socket. */
  async message(userId: string, text: string): Promise<Message> {
    const m: Message = { id: `m${this.state.messages.length + 1}`, role: "user", userId, ts: Date.now(), text };
    this.setState({ messages: [...this.state.messages, m] });
    return m;
  }
}

const ROOM_PATH = /^\/api\/rooms\/([A-Za-z0-9_-]{1,64})\/(ws|message)$/;

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/health") return new Response("ok");
    const route = ROOM_PATH.exec(url.pathname);
    if (!route) return new Response("not found", { status: 404 });
    const [, room, what] = route;
    if (what === "ws") {
      // The SDK's own route for the room: /agents/original-room/{room}.
      url.pathname = `/agents/original-room/${room}`;
      return (await routeAgentRequest(new Request(url, request), env)) ?? new Response("not found", { status: 404 });
    }
    if (request.method !== "POST") return new Response("method not allowed", { status: 405 });
    const body = (await request.json().catch(() => null)) as { text?: unknown; userId?: unknown } | null;
    if (typeof body?.text !== "string") return Response.json({ error: "text must be a string" }, { status: 400 });
    const stub = await getAgentByName(env.OriginalRoom, room);
    const userId = typeof body.userId === "string" ? body.userId : "anonymous";
    return Response.json(await stub.message(userId, body.text));
  },
};
