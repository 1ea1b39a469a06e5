// The original engine's room, the baseline of the fan-out figures
// (benches/server.rs, section `original`): a bare Agents SDK `Agent` whose
// `setState` carries the message list, as the first Duet worker did. Each
// message is appended to the state; the SDK stores the whole state and
// broadcasts it (`cf_agent_state`) to every connection. It answers the
// paths the benchmark's clients use on the other backends (routes.ts; its
// socket is the SDK's connection).
// Nothing else of Duet: no records, no limits, no agent turn.

import { Agent, getAgentByName, routeAgentRequest } from "agents";
import { benchFetch } from "./routes";

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

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    return benchFetch(request, {
      async socket(room, req, url) {
        // The SDK's own route for the room: /agents/original-room/{room}.
        url.pathname = `/agents/original-room/${room}`;
        return (await routeAgentRequest(new Request(url, req), env)) ?? new Response("not found", { status: 404 });
      },
      message: async (room, userId, text) => (await getAgentByName(env.OriginalRoom, room)).message(userId, text),
    });
  },
};
