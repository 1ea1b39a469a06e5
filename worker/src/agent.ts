// The room's Durable Object, an Agents SDK `Agent`: its sockets (on both
// `/api/rooms/{room}/ws` and `/agents/duet-agent/{room}`), the connect
// sequence, presence, typing, the client's frames (rpc, the refused state,
// garbage), a socket's new name (rpc `rename`), its use of the shared
// terminal (rpc `term_*`, `duet_term_input`, `duet_term_resize`: the
// room's src/terminal.ts) and the operations the Worker forwards to it
// (onRequest).
//
// The SDK's own protocol is switched off where it differs from
// docs/protocol.md: no `cf_agent_mcp_servers`, no `stateFollows`, rpc
// failures with `status`/`details`, every connection read-only and the
// room's data in our own tables (store.ts), never in `setState`.

import { Agent, type Connection, type ConnectionContext } from "agents";
import { may, type Caller } from "./access";
import type { Env } from "./env";
import { ApiError, describe, isObject, response, notServeJson, readJson, type JsonObject, type Reply } from "./http";
import { SOCKETS_RETRY_MS, SocketBuckets, rateLimits } from "./limits";
import { OPERATIONS, UnknownMethod, rpcOp, type Method, type Op, type SocketMethod } from "./ops";
import { CALLER_PATH, EXECS_PAGE_PATH, OP_PATH, PAGE_PATH, SANDBOX_STOPPED_PATH } from "./rooms";
import { MAX_BODY, READONLY_FRAME, errorFrame, identityFrame, messageFrame, presenceDeltaFrame, presenceFrame, rateLimitedFrame, typingFrame, youFrame, type DuetMessage, type PresenceDelta, type PresenceUser } from "./protocol";
import { randomHex } from "./text";
import { Room } from "./room";
import { type Who } from "./roomstate";
import { SandboxStarting } from "./sandbox/types";
import { SocketList } from "./socketlist";
import { Store } from "./store";

/** The biggest frame a socket may send (src/server/ws.rs: MAX_FRAME); a bigger one closes it (1009). */
const MAX_FRAME = MAX_BODY + 4096;
const FRAME_TOO_BIG = "a frame is at most 1 MiB";

/** Typing is relayed at most this often per connection. */
const TYPING_EVERY_MS = 2_000;
/** The close code of a socket whose invite was revoked or expired. */
export const CLOSE_UNAUTHORIZED = 4401;
const EXPIRED = "the invite expired";

/** Who is on a connection; kept in the connection's state across hibernation. */
interface Peer {
  /** Presence id: `_pk`, or one the server assigns. */
  id: string;
  /** `user`, if given. */
  user?: string;
  /** The presence name: `user` or "anonymous". */
  name: string;
  since: number;
  /** Join order, for the presence list. */
  seq: number;
  /** The socket asked for state deltas (`deltas=1`). */
  deltas: boolean;
  /** The invite it joined with (none: the server's token); its role is the invite's, as of now. */
  inviteId?: string;
  /** How it reached the backend (`http://HOST:PORT`): the base of the invites it makes. */
  link?: string;
  /** When its typing was last relayed: into the chat, and into the shared terminal (each at most every 2 s). */
  typingAt?: number;
  termTypingAt?: number;
}

type DuetConnection = Connection<{ duet?: Peer }>;

export class DuetAgent extends Agent<Env> {
  private roomCore?: Room;
  private lastSeq = 0;
  private readonly socketBuckets = new Map<string, SocketBuckets>();
  /** The room's open sockets, kept between a connect or close and the next. */
  private readonly sockets = new SocketList<DuetConnection>(
    () => this.getConnections() as Iterable<DuetConnection>,
    (c) => c.state?.duet?.deltas === true,
  );

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // The SDK installs its frame handler (which answers `rpc` and
    // `cf_agent_state` its own way) as an instance property in its
    // constructor; every frame is ours instead. Relies on agents 0.32.0,
    // pinned, with a test on each of those frames.
    this.onMessage = (connection: Connection, message: string | ArrayBuffer | ArrayBufferView) =>
      this.frame(connection as DuetConnection, message);
  }

  /**
   * Before the first request or socket of each start: the room loads (and
   * notes a turn that the restart cut off) before anyone's connect frames.
   */
  async onStart(): Promise<void> {
    this.room();
    // After a restart the sockets are gone (after a hibernation they are all
    // still here). A room never used is not in the list: nothing to tell.
    if (this.room().everUsed()) this.countPeople();
  }

  /** The room list's `people`: distinct names among the sockets, but those `leaving`. */
  private countPeople(leaving: Connection[] = []): void {
    const names = new Set(this.presence(leaving).map((p) => p.name));
    this.room().lobby.count(names.size);
  }

  shouldSendProtocolMessages(): boolean {
    return false;
  }

  shouldConnectionBeReadonly(): boolean {
    return true;
  }

  /** The room, loaded from storage on first use after each start. */
  private room(): Room {
    if (this.roomCore) return this.roomCore;
    this.roomCore = new Room(this.name, this.env, new Store(this.ctx.storage), {
      all: (text) => this.sendAll(text),
      message: (m, patch) => this.sendMessage(m, patch),
      state: () => this.sendAll(this.room().stateText()),
      patch: (patch) => this.sendChange(patch),
      send: (connection, text) => {
        const c = this.getConnection(connection);
        if (c) send(c, text);
      },
      count: () => this.connections().length,
      roleChanged: (inviteId) => this.roleChanged(inviteId),
      closeInvite: (inviteId, reason) => this.closeInvite(inviteId, reason),
      expiresAt: (at) => this.expiresAt(at),
    });
    // No turn runs in an object that just started: a question left unanswered was cut off.
    this.roomCore.noteUnfinishedTurn();
    return this.roomCore;
  }

  // ---- Requests the Worker forwards (index.ts) ----

  /**
   * `POST /duet/op` (a validated operation as JSON), `GET
   * /duet/messages?before&limit` and `GET /duet/execs?before&limit`. A fetch rather than Durable Object RPC:
   * an answer (a command's whole output) may exceed RPC's 32 MiB per value.
   */
  async onRequest(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === OP_PATH) {
      let sent: { op: Op; who?: Who };
      try {
        sent = (await request.json()) as { op: Op; who?: Who };
      } catch (e) {
        return response(ApiError.field("body", `is not valid JSON: ${describe(e)}`).reply());
      }
      return response(await this.room().perform(sent.op, sent.who));
    }
    if (request.method === "POST" && url.pathname === CALLER_PATH) {
      // Who a token (by its hash) or an invite is in this room, as of now; 401 when nobody.
      const asked = (await request.json().catch(() => ({}))) as { hash?: string; inviteId?: string };
      const room = this.room();
      const caller = asked.hash !== undefined ? room.invites.byHash(asked.hash) : room.callerOf({ inviteId: asked.inviteId });
      return caller ? Response.json(caller) : response(ApiError.unauthorized().reply());
    }
    if (request.method === "POST" && url.pathname === SANDBOX_STOPPED_PATH) {
      this.room().sandboxStopped();
      return new Response(null, { status: 204 });
    }
    if (request.method === "GET" && (url.pathname === PAGE_PATH || url.pathname === EXECS_PAGE_PATH)) {
      const before = url.searchParams.get("before") ?? undefined;
      const limit = Number(url.searchParams.get("limit"));
      const room = this.room();
      return response(url.pathname === PAGE_PATH ? room.page(before, limit) : room.execPage(before, limit));
    }
    return new Response("not found", { status: 404 });
  }

  // ---- Sockets ----

  /** A socket upgrade over the room's socket cap answers 503; anything else goes to the SDK. */
  async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
      const cap = rateLimits(this.env).maxRoomSockets;
      if (this.connections().length >= cap) return response(ApiError.tooManySockets(SOCKETS_RETRY_MS).reply());
    }
    return super.fetch(request);
  }

  /** A socket's rate buckets (in memory: a hibernation or restart refills them). */
  private bucketsOf(c: Connection): SocketBuckets {
    let b = this.socketBuckets.get(c.id);
    if (!b) this.socketBuckets.set(c.id, (b = new SocketBuckets(rateLimits(this.env))));
    return b;
  }

  /** The open sockets. */
  private connections(): DuetConnection[] {
    return this.sockets.all();
  }

  private sendAll(text: string, ...except: Connection[]): void {
    for (const c of this.connections()) if (except.length === 0 || !except.includes(c)) send(c, text);
  }

  /** A stored message: `duet_message` to the sockets that asked for deltas, the state to the others; each frame made once. */
  private sendMessage(m: DuetMessage, patch?: string): void {
    const { deltas, full } = this.sockets.groups();
    if (deltas.length > 0) {
      const delta = messageFrame(m);
      for (const c of deltas) {
        send(c, delta);
        if (patch) send(c, patch);
      }
    }
    if (full.length > 0) {
      const state = this.room().stateText();
      for (const c of full) send(c, state);
    }
  }

  /** A field of the state other than messages changed: `patch` to deltas sockets, the whole state to the others. */
  private sendChange(patch: string): void {
    const { deltas, full } = this.sockets.groups();
    for (const c of deltas) send(c, patch);
    if (full.length > 0) {
      const state = this.room().stateText();
      for (const c of full) send(c, state);
    }
  }

  /** One entry per connection, in join order; `except` are leaving. */
  private presence(except: Connection[] = []): PresenceUser[] {
    return this.connections()
      .filter((c) => !except.includes(c) && c.state?.duet)
      .map((c) => c.state?.duet as Peer)
      .sort((a, b) => a.seq - b.seq)
      .map((p) => ({ id: p.id, name: p.name, since: p.since, role: this.callerOf(p)?.role ?? "viewer" }));
  }

  /**
   * Presence changed for the sockets `touched` (those `left` are gone):
   * `duet_presence_delta` to sockets that asked for deltas, the whole list
   * to the others, none to `except`. An id on more than one socket is sent
   * whole (left, then joined again) so that applying the delta stays exact.
   */
  private presenceNews(touched: { joined?: Connection; changed?: Connection[]; left?: Connection[] }, except?: Connection): void {
    const leaving = touched.left ?? [];
    const users = this.presence(leaving);
    const delta: PresenceDelta = { joined: [], left: [], changed: [] };
    const resend = (id: string) => {
      if (delta.left.includes(id)) return;
      delta.left.push(id);
      delta.joined.push(...users.filter((u) => u.id === id));
    };
    for (const c of leaving) {
      const id = (c as DuetConnection).state?.duet?.id;
      if (id !== undefined) resend(id);
    }
    const entries: [Connection, PresenceUser[]][] = [];
    if (touched.joined) entries.push([touched.joined, delta.joined]);
    for (const c of touched.changed ?? []) entries.push([c, delta.changed]);
    for (const [c, into] of entries) {
      const id = (c as DuetConnection).state?.duet?.id;
      const mine = users.filter((u) => u.id === id);
      if (id !== undefined && mine.length > 1) resend(id);
      else if (mine[0] && !into.some((u) => u.id === id)) into.push(mine[0]);
    }
    let full: string | undefined;
    let small: string | undefined;
    for (const c of this.connections()) {
      if (c === except || leaving.includes(c)) continue;
      if (c.state?.duet?.deltas) send(c, (small ??= presenceDeltaFrame(delta)));
      else send(c, (full ??= presenceFrame(users)));
    }
  }

  /** Who a socket is now: its invite's role and name (undefined once the invite was revoked or expired). */
  private callerOf(peer: Peer | undefined): Caller | undefined {
    return this.room().callerOf({ inviteId: peer?.inviteId });
  }

  /** `duet_you` of a socket. */
  private you(c: DuetConnection): string | undefined {
    const peer = c.state?.duet;
    const caller = this.callerOf(peer);
    return peer && caller ? youFrame(peer.id, peer.name, caller.role, peer.inviteId) : undefined;
  }

  /** The sockets of invite `inviteId`. */
  private ofInvite(inviteId: string): DuetConnection[] {
    return this.connections().filter((c) => c.state?.duet?.inviteId === inviteId);
  }

  /** A role changed: `duet_you` to the invite's sockets, `duet_presence` to everyone; a viewer's size stops counting. */
  private roleChanged(inviteId: string): void {
    for (const c of this.ofInvite(inviteId)) {
      const caller = this.callerOf(c.state?.duet);
      if (caller && !may(caller.role, "resizeTerminal")) this.room().terminal.ignoreSize(c.id);
      const you = this.you(c);
      if (you) send(c, you);
    }
    this.presenceNews({ changed: this.ofInvite(inviteId) });
  }

  /** The invite's sockets close with 4401; the others see them leave. */
  private closeInvite(inviteId: string, reason: string): void {
    const leaving = this.ofInvite(inviteId);
    if (leaving.length === 0) return;
    for (const c of leaving) this.dropSocket(c, reason);
    this.presenceNews({ left: leaving });
    this.countPeople(leaving);
  }

  /** Closes a socket whose credential stopped working, forgetting its place in the room. */
  private dropSocket(c: DuetConnection, reason: string): void {
    this.sockets.forget();
    this.socketBuckets.delete(c.id);
    this.room().terminal.left(c.id);
    this.room().processes.left(c.id);
    try {
      c.close(CLOSE_UNAUTHORIZED, reason);
    } catch {
      // It closed already.
    }
  }

  /**
   * An invite expires at `at`: an alarm (the SDK's schedule, kept in
   * storage) wakes the object then, hibernated or not. The schedule counts
   * whole seconds: rounded up, it never fires before `at`.
   */
  private expiresAt(at: number): void {
    const when = new Date(Math.ceil(at / 1000) * 1000);
    void this.schedule(when, "inviteExpired", { at }, { idempotent: true }).catch((e: unknown) =>
      console.error(`duet-agent: scheduling an invite's expiry failed: ${describe(e)}`),
    );
  }

  /** The schedule's callback: the sockets of every invite that expired close with 4401. */
  async inviteExpired(): Promise<void> {
    const leaving = this.connections().filter((c) => c.state?.duet?.inviteId !== undefined && !this.callerOf(c.state.duet));
    if (leaving.length === 0) return;
    for (const c of leaving) this.dropSocket(c, EXPIRED);
    this.presenceNews({ left: leaving });
    this.countPeople(leaving);
  }

  private nextSeq(): number {
    for (const c of this.connections()) this.lastSeq = Math.max(this.lastSeq, c.state?.duet?.seq ?? 0);
    return ++this.lastSeq;
  }

  /** Identity, state, presence to the newcomer; presence to the others. The Worker checked the query. */
  async onConnect(connection: Connection, ctx: ConnectionContext): Promise<void> {
    const c = connection as DuetConnection;
    this.sockets.forget();
    const query = new URL(ctx.request.url).searchParams;
    const inviteId = query.get("invite") ?? undefined;
    const caller = this.room().callerOf({ inviteId });
    // Revoked or expired since the Worker looked.
    if (!caller) return c.close(CLOSE_UNAUTHORIZED, EXPIRED);
    // An invite that fixes a name gives it, whatever the query says.
    const user = caller.name ?? query.get("user") ?? undefined;
    const peer: Peer = {
      id: query.get("_pk") || `c${randomHex()}`,
      user,
      name: user ?? "anonymous",
      since: Date.now(),
      seq: this.nextSeq(),
      deltas: query.get("deltas") === "1",
      ...(inviteId !== undefined && { inviteId }),
      ...(query.get("link") !== null && { link: query.get("link") as string }),
    };
    c.setState({ ...(c.state ?? {}), duet: peer });
    // Listed anew with its peer (nextSeq() listed it without).
    this.sockets.forget();
    this.room().joined();
    this.countPeople();
    send(c, identityFrame(this.name));
    send(c, this.room().stateText());
    send(c, presenceFrame(this.presence()));
    send(c, youFrame(peer.id, peer.name, caller.role, inviteId));
    this.presenceNews({ joined: c }, c);
  }

  async onClose(connection: Connection): Promise<void> {
    this.sockets.forget();
    this.socketBuckets.delete(connection.id);
    this.room().terminal.left(connection.id);
    this.room().processes.left(connection.id);
    this.presenceNews({ left: [connection] });
    this.countPeople([connection]);
  }

  onError(connectionOrError: unknown, error?: unknown): void {
    console.error("duet-agent:", describe(error ?? connectionOrError));
  }

  /** A client's frame: typing, rpc, a refused state, or garbage answered with `duet_error`. */
  private async frame(c: DuetConnection, message: string | ArrayBuffer | ArrayBufferView): Promise<void> {
    const size = typeof message === "string" ? utf8Length(message) : message.byteLength;
    if (size > MAX_FRAME) return c.close(1009, FRAME_TOO_BIG);
    if (typeof message !== "string") {
      const over = this.bucketsOf(c).frame(size);
      return send(c, over ? rateLimitedFrame(over.retryAfterMs ?? 1) : errorFrame("binary frames are not supported"));
    }
    let value: unknown;
    let notJson: unknown;
    try {
      value = readJson(message);
    } catch (e) {
      notJson = e;
    }
    const type = isObject(value) ? value.type : undefined;
    // Terminal frames count in bytes only: a keystroke is a frame.
    const over = type === "duet_term_input" || type === "duet_term_resize" ? this.bucketsOf(c).termFrame(size) : this.bucketsOf(c).frame(size);
    if (notJson !== undefined) {
      return send(c, over ? rateLimitedFrame(over.retryAfterMs ?? 1) : errorFrame(`the frame is not JSON: ${describe(notJson)}`));
    }
    const lone = over ? undefined : notServeJson(value);
    if (lone) return send(c, errorFrame(`the frame ${lone}`));
    if (over) {
      // Dropped: an rpc is answered as one, anything else with duet_error.
      const rpcId = isObject(value) && type === "rpc" && Object.prototype.hasOwnProperty.call(value, "id");
      return send(c, rpcId && isObject(value) ? failure(JSON.stringify(value.id ?? null), over.reply()) : rateLimitedFrame(over.retryAfterMs ?? 1));
    }
    if (!isObject(value) || typeof type !== "string") return send(c, errorFrame('a frame needs a string "type"'));
    if (type === "duet_term_input" || type === "duet_term_resize") {
      const caller = this.callerOf(c.state?.duet);
      if (!caller || !may(caller.role, type === "duet_term_input" ? "typeIntoTerminal" : "resizeTerminal")) {
        return send(c, errorFrame("forbidden"));
      }
    }
    switch (type) {
      case "duet_typing":
        return this.typing(c);
      case "duet_term_input": {
        const refused = this.room().terminal.input(c.id, value.termId, value.data);
        if (refused) return send(c, errorFrame(refused));
        return this.typing(c, value.termId as string);
      }
      case "duet_term_resize": {
        const refused = this.room().terminal.resize(c.id, value.termId, value);
        if (refused) send(c, errorFrame(refused));
        return;
      }
      case "cf_agent_state":
        return send(c, READONLY_FRAME);
      case "rpc":
        return this.rpc(c, value);
      default:
        return send(c, errorFrame(`unknown frame type ${JSON.stringify(type)}`));
    }
  }

  /** `duet_typing` to the others, at most every 2 s per socket; `termId` when into the shared terminal. */
  private typing(c: DuetConnection, termId?: string): void {
    const peer = c.state?.duet;
    if (!peer) return;
    const now = Date.now();
    const last = termId === undefined ? peer.typingAt : peer.termTypingAt;
    if (last !== undefined && now - last < TYPING_EVERY_MS) return;
    const typed = termId === undefined ? { typingAt: now } : { termTypingAt: now };
    c.setState({ ...c.state, duet: { ...peer, ...typed } });
    this.sendAll(typingFrame(peer.id, peer.name, termId), c);
  }

  /** Answers an rpc frame: the HTTP body as `result`, or the HTTP error with `status` and `details`. */
  private async rpc(c: DuetConnection, frame: JsonObject): Promise<void> {
    if (!Object.prototype.hasOwnProperty.call(frame, "id")) return send(c, errorFrame('an rpc frame needs an "id"'));
    const id = JSON.stringify(frame.id ?? null);
    const peer = c.state?.duet;
    let op: Op;
    try {
      op = rpcOp(frame, peer?.user, peer?.id);
    } catch (e) {
      if (e instanceof UnknownMethod) {
        return send(c, `{"type":"rpc","id":${id},"success":false,"error":${JSON.stringify(e.message)},"done":true}`);
      }
      return send(c, failure(id, (e instanceof ApiError ? e : ApiError.internal(describe(e))).reply()));
    }
    // Who asks, as of now: the role decides (a 403) before anything is counted or done.
    const caller = this.callerOf(peer);
    if (!caller) return send(c, failure(id, ApiError.unauthorized().reply()));
    try {
      this.room().authorize(op, caller);
      if (op.kind === "rename" && caller.name !== undefined) {
        throw new ApiError(403, "forbidden", { name: [`your invite fixes your name: you are ${JSON.stringify(caller.name)} in this room`] });
      }
    } catch (e) {
      return send(c, failure(id, (e instanceof ApiError ? e : ApiError.internal(describe(e))).reply()));
    }
    if (op.kind === "invite_create" && peer?.link !== undefined) op.link = peer.link;
    const operation: { counts?: "messages" | "commands"; route: string | null } = OPERATIONS[op.kind as Method];
    // A repeated message (its clientId known) stores nothing: it is not counted.
    const repeat = op.kind === "message" && op.clientId !== undefined && this.room().knowsClient(op.clientId);
    const bucket = operation.counts === undefined || repeat ? undefined : this.bucketsOf(c)[operation.counts];
    const wait = bucket?.take() ?? 0;
    if (bucket && wait > 0) return send(c, failure(id, ApiError.rateLimited(bucket.rule, wait).reply()));
    // The socket's own operations (no HTTP route) are answered here, the others by the room.
    if (operation.route === null) return this.ownRpc(c, id, op as Extract<Op, { kind: SocketMethod }>);
    const reply = await this.room().perform(op, { inviteId: peer?.inviteId });
    // The body keeps its field order: spliced in, not re-parsed.
    if (reply.status < 300) send(c, `{"type":"rpc","id":${id},"success":true,"result":${reply.body},"done":true}`);
    else send(c, failure(id, reply));
  }

  /** An rpc of the socket's own (ops.ts `SocketMethod`: its name, its terminal, its follows). */
  private async ownRpc(c: DuetConnection, id: string, op: Extract<Op, { kind: SocketMethod }>): Promise<void> {
    switch (op.kind) {
      case "rename": {
        const reply = this.rename(c, op.name);
        if (reply.status < 300) send(c, `{"type":"rpc","id":${id},"success":true,"result":${reply.body},"done":true}`);
        else send(c, failure(id, reply));
        return;
      }
      case "term_open":
      case "term_detach":
      case "term_close":
        return this.terminalRpc(c, id, op);
      case "process_follow":
      case "process_unfollow":
        return this.followRpc(c, id, op);
      default:
        // A new socket-only operation needs its answer here.
        return op satisfies never;
    }
  }

  /** rpc `term_open`, `term_detach`, `term_close`: this socket's attachment; after `term_open`'s answer, its snapshot. */
  private async terminalRpc(c: DuetConnection, id: string, op: Extract<Op, { kind: "term_open" | "term_detach" | "term_close" }>): Promise<void> {
    const terminal = this.room().terminal;
    const answer = (reply: Reply) =>
      reply.status < 300 ? send(c, `{"type":"rpc","id":${id},"success":true,"result":${reply.body},"done":true}`) : send(c, failure(id, reply));
    try {
      if (op.kind === "term_open") {
        // A viewer watches: its size never counts in the smallest rule.
        const counts = may(this.callerOf(c.state?.duet)?.role ?? "viewer", "resizeTerminal");
        const { reply, after } = await terminal.open(c.id, c.state?.duet?.name ?? "anonymous", counts ? op.size : undefined, op.screen === true);
        answer(reply);
        after();
      } else if (op.kind === "term_detach") {
        answer(terminal.detach(c.id, op.termId));
      } else {
        answer(await terminal.close(op.termId));
      }
    } catch (e) {
      if (e instanceof SandboxStarting) return answer(ApiError.starting(e.retryAfterSecs).reply());
      answer(ApiError.internal(`the terminal could not open: ${describe(e)}`).reply());
    }
  }

  /**
   * rpc `process_follow`, `process_unfollow`: this socket's follow. The
   * answer goes out in the same turn as the log it holds, so that no output
   * frame comes between them.
   */
  private followRpc(c: DuetConnection, id: string, op: Extract<Op, { kind: "process_follow" | "process_unfollow" }>): void {
    const processes = this.room().processes;
    let reply: Reply;
    try {
      reply = op.kind === "process_follow" ? processes.follow(c.id, op.processId) : processes.unfollow(c.id, op.processId);
    } catch (e) {
      reply = (e instanceof ApiError ? e : ApiError.internal(describe(e))).reply();
    }
    if (reply.status < 300) send(c, `{"type":"rpc","id":${id},"success":true,"result":${reply.body},"done":true}`);
    else send(c, failure(id, reply));
  }

  /** rpc `rename`: the connection's name for what it does from now on, the new presence, and its record. */
  private rename(c: DuetConnection, name: string): Reply {
    const peer = c.state?.duet;
    if (!peer) return ApiError.field("name", "only a socket of the room can change its name").reply();
    return this.room().rename(peer.name, name, () => {
      // In the connection's state, so that the name survives a hibernation.
      c.setState({ ...c.state, duet: { ...peer, user: name, name } });
      if (peer.name === name) return;
      this.presenceNews({ changed: [c] });
      this.countPeople();
      const you = this.you(c);
      if (you) send(c, you);
    });
  }
}

/** An error answer as a failed rpc. */
function failure(id: string, reply: Reply): string {
  let body: { error?: unknown; details?: unknown; retryAfterMs?: unknown } = {};
  try {
    body = JSON.parse(reply.body) as typeof body;
  } catch {
    body = { error: reply.body };
  }
  const details = body.details !== undefined ? `,"details":${JSON.stringify(body.details)}` : "";
  // A 503 (the sandbox is starting) says when to retry in the frame too, as a 429 does.
  const retryMs = typeof body.retryAfterMs === "number" ? body.retryAfterMs : reply.retryAfter !== undefined ? reply.retryAfter * 1000 : undefined;
  const retry = retryMs !== undefined ? `,"retryAfterMs":${retryMs}` : "";
  return `{"type":"rpc","id":${id},"success":false,"error":${JSON.stringify(String(body.error))},"status":${reply.status}${details}${retry},"done":true}`;
}

/** Bytes of `text` in UTF-8 (what the socket carried), counted without copying it. */
function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A surrogate pair is 4 bytes: 2 for each half.
    n += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3;
  }
  return n;
}

/** Sends a frame, tolerating a peer that left. */
function send(c: Connection, text: string): void {
  try {
    c.send(text);
  } catch {
    // The socket closed between the event and the send.
  }
}
