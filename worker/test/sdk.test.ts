// The stock Agents SDK client (`agents/client`, pinned 0.32.0) joins a room
// on `/agents/duet-agent/{room}` and calls its methods. Its WebSocket is a
// small adapter over SELF's upgrade (workerd cannot dial its own Worker).
import { SELF } from "cloudflare:test";
import { AgentClient } from "agents/client";
import { describe, expect, it } from "vitest";
import { ORIGIN, TOKEN, post, room } from "./support";

/** A browser-style WebSocket whose connection is an upgrade of SELF. */
class SelfWebSocket extends EventTarget {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  readonly CONNECTING = 0;
  readonly OPEN = 1;
  readonly CLOSING = 2;
  readonly CLOSED = 3;
  readyState = 0;
  binaryType = "blob";
  bufferedAmount = 0;
  extensions = "";
  protocol = "";
  onopen: ((e: Event) => void) | null = null;
  onmessage: ((e: MessageEvent) => void) | null = null;
  onclose: ((e: CloseEvent) => void) | null = null;
  onerror: ((e: Event) => void) | null = null;
  private socket?: WebSocket;

  constructor(readonly url: string) {
    super();
    const http = url.replace(/^ws/, "http");
    SELF.fetch(http, { headers: { Upgrade: "websocket" } }).then(
      (res) => {
        const socket = res.webSocket;
        if (!socket) return this.fail();
        this.socket = socket;
        socket.accept();
        socket.addEventListener("message", (e) => this.emit(new MessageEvent("message", { data: e.data })));
        socket.addEventListener("close", (e) => {
          this.readyState = 3;
          this.emit(new CloseEvent("close", { code: e.code, reason: e.reason, wasClean: e.wasClean }));
        });
        this.readyState = 1;
        this.emit(new Event("open"));
      },
      () => this.fail(),
    );
  }

  private fail() {
    this.readyState = 3;
    this.emit(new Event("error"));
    this.emit(new CloseEvent("close", { code: 1006, reason: "", wasClean: false }));
  }

  private emit(e: Event) {
    const handler = (this as unknown as Record<string, ((e: Event) => void) | null>)[`on${e.type}`];
    handler?.call(this, e);
    this.dispatchEvent(e);
  }

  send(data: string) {
    this.socket?.send(data);
  }

  close(code?: number, reason?: string) {
    this.readyState = 2;
    this.socket?.close(code ?? 1000, reason);
  }
}

describe("the Agents SDK client", () => {
  it("connects, sees the room's state and calls exec; an unknown method rejects", async () => {
    const r = room("sdk");
    await post(`/api/rooms/${r}/message`, { text: "hello" });
    const states: unknown[] = [];
    let refusedWith: (error: string) => void = () => {};
    const refused = new Promise<string>((ok) => (refusedWith = ok));
    const client = new AgentClient({
      agent: "DuetAgent",
      name: r,
      host: new URL(ORIGIN).host,
      protocol: "ws",
      query: { token: TOKEN, user: "sdk" },
      WebSocket: SelfWebSocket as unknown as typeof WebSocket,
      onStateUpdate: (state: unknown) => states.push(state),
      onStateUpdateError: (error: string) => refusedWith(error),
    });
    try {
      await client.ready;
      expect(client.identified).toBe(true);
      const result = (await client.call("exec", [{ cmd: "echo from the sdk" }])) as any;
      expect(result.result.stdout).toBe("from the sdk\n");
      expect(result.sandboxName).toBe(`sandbox-${r}`);
      expect((states[0] as any).messages[0].text).toBe("hello");
      await expect(client.call("dance", [])).rejects.toThrow('unknown method "dance"');
      // The SDK's setState is refused: the room's history is read-only.
      client.setState({ messages: [], execs: [] });
      expect(await refused).toBe("Connection is readonly");
      expect((await post(`/api/rooms/${r}/cancel`, {})).body).toEqual({ cancelled: false });
    } finally {
      client.close();
    }
  });
});
