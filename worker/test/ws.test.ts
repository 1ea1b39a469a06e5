// The room's socket in the Durable Object: connect sequence on both paths,
// presence, typing, state frames, rpc, refused and malformed frames,
// cleanup (tests/it/neutral/server_ws.rs), and the Agents SDK paths CLOUDFLARE.md
// warns about.
import { describe, expect, it } from "vitest";
import { joined, openSocket, post, room, ws, type Json } from "./support";

function names(presence: Json): [string, string][] {
  expect(presence.type, JSON.stringify(presence)).toBe("duet_presence");
  return presence.users.map((u: Json) => {
    expect(u.since).toBeGreaterThan(0);
    return [u.id, u.name];
  });
}

describe("socket", () => {
  it("sends identity, state, then presence on connect, on both paths, and nothing of the SDK's own", async () => {
    for (const prefix of ["/api/rooms/R/ws", "/agents/duet-agent/R"]) {
      const r = room("W");
      expect((await post(`/api/rooms/${r}/message`, { text: "earlier" })).status).toBe(200);
      const opened = await openSocket(`${prefix.replace("R", r)}?user=ada&_pk=p1`);
      expect(opened.status).toBe(101);
      const s = opened.ws!;
      // Exactly docs/protocol.md's identity: no stateFollows.
      expect(await s.nextText()).toBe(JSON.stringify({ type: "cf_agent_identity", name: r, agent: "duet-agent" }));
      const state = await s.next();
      expect(state.type).toBe("cf_agent_state");
      expect(state.state.messages[0].text).toBe("earlier");
      expect(state.state.messages.length).toBe(2);
      expect(state.state.execs).toEqual([]);
      expect(names(await s.next())).toEqual([["p1", "ada"]]);
      // No cf_agent_mcp_servers (or anything else) follows.
      const answer = await s.rpc("x", "cancel", []);
      expect(answer.result).toEqual({ cancelled: false });
      s.close();
    }
    const s = await ws(room(), "");
    await s.next();
    await s.next();
    const users = names(await s.next());
    expect(users.length).toBe(1);
    expect(users[0][1]).toBe("anonymous");
    expect(users[0][0]).not.toBe("");
  });

  it("keeps the case of room names apart", async () => {
    const r = room("Case");
    await post(`/api/rooms/${r}/message`, { text: "upper" });
    const lower = await ws(r.toLowerCase());
    expect((await lower.next()).name).toBe(r.toLowerCase());
    expect((await lower.next()).state.messages).toEqual([]);
  });

  it("shows two clients each other joining, typing and leaving", async () => {
    const r = room();
    const ada = await joined(r, "user=ada&_pk=a");
    const bob = await joined(r, "user=bob&_pk=b");
    expect(names(await ada.next())).toEqual([
      ["a", "ada"],
      ["b", "bob"],
    ]);
    bob.send({ type: "duet_typing" });
    bob.send({ type: "duet_typing" });
    expect(await ada.next()).toEqual({ type: "duet_typing", id: "b", name: "bob" });
    // Bob sees neither his own typing nor a second one.
    await post(`/api/rooms/${r}/message`, { text: "hi", userId: "bob" });
    for (const s of [ada, bob]) {
      const frame = await s.next();
      expect(frame.type, JSON.stringify(frame)).toBe("cf_agent_state");
      expect(frame.state.messages[0].text).toBe("hi");
    }
    bob.close();
    const left = await ada.untilType("duet_presence");
    expect(names(left)).toEqual([["a", "ada"]]);
  });

  it("sends every stored message as a state frame to everyone", async () => {
    const r = room();
    const ada = await joined(r, "user=ada");
    const bob = await joined(r, "user=bob");
    await ada.untilType("duet_presence");
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: "hello", userId: "ada" });
    expect(status).toBe(200);
    for (const s of [ada, bob]) {
      const first = await s.untilType("cf_agent_state");
      expect(first.state.messages.length).toBe(1);
      expect(first.state.messages[0].role).toBe("user");
      const second = await s.untilType("cf_agent_state");
      expect(second.state.messages).toEqual(body.messages);
      expect(second.state.messages[1].role).toBe("system");
    }
  });

  it("answers rpc methods like HTTP, failures with status and details", async () => {
    const r = room();
    const ada = await joined(r, "user=ada");
    let answer = await ada.rpc(1, "message", [{ text: "via rpc" }]);
    expect(answer.success, JSON.stringify(answer)).toBe(true);
    expect(answer.done).toBe(true);
    expect(answer.result.reply).toBeNull();
    expect(answer.result.messages[0].userId).toBe("ada");
    expect(answer.result.messages[1].role).toBe("system");
    answer = await ada.rpc(2, "exec", [{ cmd: "" }]);
    expect(answer).toEqual({
      type: "rpc",
      id: 2,
      success: false,
      error: "invalid request",
      status: 400,
      details: { cmd: ["must not be empty"] },
      done: true,
    });
    answer = await ada.rpc(3, "dance", []);
    expect(answer).toEqual({ type: "rpc", id: 3, success: false, error: 'unknown method "dance"', done: true });
    expect((await ada.rpc(4, "cancel", [{}])).result).toEqual({ cancelled: false });
    expect((await ada.rpc(5, "interrupt", [])).result).toEqual({ interrupted: false });
    expect((await ada.rpc(6, "exec", "not a list")).details).toEqual({ args: ["must be an array"] });
    expect((await ada.rpc(7, "exec", [3])).details).toEqual({ args: ["args[0] must be an object"] });
    ada.send({ type: "rpc", id: "abc", method: "cancel", args: [] });
    expect(await ada.nextText()).toBe('{"type":"rpc","id":"abc","success":true,"result":{"cancelled":false},"done":true}');
  });

  it("refuses a client's state and answers garbage with duet_error, staying open", async () => {
    const r = room();
    const ada = await joined(r, "user=ada");
    ada.send({ type: "cf_agent_state", state: { messages: [{ id: "x", role: "user", text: "forged", ts: 1 }], execs: [] } });
    expect(await ada.nextText()).toBe('{"type":"cf_agent_state_error","error":"Connection is readonly"}');
    for (const garbage of ["not json", "[1]", '{"type":"dance"}', '{"type":5}', '{"type":"rpc"}']) {
      ada.send(garbage);
      const frame = await ada.next();
      expect(frame.type, garbage).toBe("duet_error");
      expect(frame.error.length).toBeGreaterThan(0);
    }
    ada.socket.send(new Uint8Array([1, 2, 3]));
    expect(await ada.next()).toEqual({ type: "duet_error", error: "binary frames are not supported" });
    expect((await ada.rpc(8, "cancel", [])).success).toBe(true);
    // Nobody rewrote the history.
    const carl = await ws(r);
    await carl.next();
    expect((await carl.next()).state.messages).toEqual([]);
  });

  it("empties every client on cleanup, the answer after the frames", async () => {
    const r = room();
    const ada = await joined(r, "user=ada");
    const bob = await joined(r, "user=bob");
    await post(`/api/rooms/${r}/message`, { text: "to be forgotten" });
    bob.send({ type: "rpc", id: 1, method: "cleanup", args: [] });
    for (const s of [ada, bob]) {
      expect(await s.untilType("duet_cleanup")).toEqual({ type: "duet_cleanup", by: "bob" });
      const emptied = await s.next();
      expect(emptied.type).toBe("cf_agent_state");
      expect(emptied.state.execs).toEqual([]);
      expect(emptied.state.shell).toEqual({ cwd: "/workspace" });
      // Only the record of who cleaned up.
      expect(emptied.state.messages.map((m: Json) => [m.role, m.userId, m.text, m.event])).toEqual([
        ["system", "bob", "bob cleaned up the room", { kind: "cleanup", by: "bob" }],
      ]);
    }
    const answer = await bob.next();
    expect(answer.result, JSON.stringify(answer)).toEqual({ cleaned: true, roomId: r });
    const carl = await ws(r);
    await carl.next();
    expect((await carl.next()).state.messages.map((m: Json) => m.event)).toEqual([{ kind: "cleanup", by: "bob" }]);
  });

  it("sends deltas to a socket that asks for them, full states to the others", async () => {
    const r = room();
    const full = await joined(r, "user=ada");
    const delta = await joined(r, "user=bob&deltas=1");
    await full.untilType("duet_presence");
    const { body } = await post(`/api/rooms/${r}/message`, { text: "hello", userId: "ada" });
    const first = await delta.until((f) => f.type !== "duet_ai");
    expect(first).toEqual({ type: "duet_message", message: body.messages[0] });
    const second = await delta.until((f) => f.type !== "duet_ai");
    expect(second).toEqual({ type: "duet_message", message: body.messages[1] });
    expect((await full.untilType("cf_agent_state")).state.messages.length).toBe(1);
    // After a cleanup, the full (empty) state.
    await post(`/api/rooms/${r}/cleanup`, {});
    expect(await delta.untilType("duet_cleanup")).toEqual({ type: "duet_cleanup", by: "anonymous" });
    const emptied = await delta.next();
    expect(emptied.type).toBe("cf_agent_state");
    expect(emptied.state.messages.map((m: Json) => m.event)).toEqual([{ kind: "cleanup", by: "anonymous" }]);
    expect([emptied.state.execs, emptied.state.shell]).toEqual([[], { cwd: "/workspace" }]);
  });
});
