// How the rest of the Worker reaches a room's Durable Object (agent.ts):
// its stub by room id, and the internal requests it serves besides the
// protocol's own routes.

import type { Caller } from "./access";
import type { DuetAgent } from "./agent";
import type { Who } from "./roomstate";
import type { Env } from "./env";

/** A validated operation (ops.ts `Op`) as JSON. */
export const OP_PATH = "/duet/op";
/** Who a token (`{hash}`) or an invite (`{inviteId}`) is in the room: `Caller`, or 401. */
export const CALLER_PATH = "/duet/caller";
/** `GET /messages` and `GET /execs`, checked: `?before&limit`. */
export const PAGE_PATH = "/duet/messages";
export const EXECS_PAGE_PATH = "/duet/execs";
/** The room's sandbox stopped (its container slept or was destroyed): a fresh shell comes next. */
export const SANDBOX_STOPPED_PATH = "/duet/sandbox-stopped";

/** The sandbox label that names the room it belongs to (sandbox ids are hashed). */
export const ROOM_LABEL = "duet-room";

/** The room's Durable Object (named, so that it knows its room). */
export function roomStub(env: Env, room: string): DurableObjectStub<DuetAgent> {
  return env.DuetAgent.get(env.DuetAgent.idFromName(room));
}

/** A request to the room's Durable Object (agent.ts, onRequest). */
export function roomRequest(path: string, init?: RequestInit): Request {
  return new Request(`https://duet-agent${path}`, init);
}

/**
 * Asks `room` to perform an operation for `who` (the invite the request
 * came with; absent: the server's token, or the room itself); its answer
 * as the HTTP response.
 */
export function roomOp(env: Env, room: string, op: object, who?: Who): Promise<Response> {
  return roomStub(env, room).fetch(roomRequest(OP_PATH, { method: "POST", body: JSON.stringify({ op, who }) }));
}

/** Who a token (its hash) or an invite is in `room` now; undefined when nobody (401). */
export async function askCaller(env: Env, room: string, asked: { hash: string } | { inviteId: string }): Promise<Caller | undefined> {
  const res = await roomStub(env, room).fetch(roomRequest(CALLER_PATH, { method: "POST", body: JSON.stringify(asked) }));
  if (res.status !== 200) {
    await res.body?.cancel();
    return undefined;
  }
  return (await res.json()) as Caller;
}

/** Tells `room` that its sandbox stopped; failures are logged, never thrown (the sandbox is stopping). */
export async function tellSandboxStopped(env: Env, room: string | undefined): Promise<void> {
  // A Worker without rooms (the sandbox tests') has no one to tell.
  if (!room || env.DuetAgent === undefined) return;
  try {
    const res = await roomStub(env, room).fetch(roomRequest(SANDBOX_STOPPED_PATH, { method: "POST" }));
    await res.body?.cancel();
  } catch (e) {
    console.error(`telling room ${room} that its sandbox stopped failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}
