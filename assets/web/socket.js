// The room's socket: a ticket for each (re)connect, reconnects with
// backoff, rpc calls with their answers, and the outbox: our messages go
// one at a time in the order written, those written offline once it is
// back, each with its `clientId` (a repeat stores nothing new).
import { ticket } from './api.js';
import { inviteEnded, inviteRefused } from './explain.js';

const MAX_BACKOFF_MS = 10000;
const MAX_RETRIES = 3;

/** The wait before attempt `n` (1-based): from 500 ms, doubling, capped,
 * its upper half jittered. */
export function backoff(n, jitter = Math.random()) {
  const base = Math.min(500 * 2 ** Math.min(n - 1, 10), MAX_BACKOFF_MS);
  return base * (0.5 + 0.5 * Math.min(1, Math.max(0, jitter)));
}

const newClientId = () => {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return 'm' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
};

export class RoomSocket {
  /** `on`: `{frame(f), status({state, reason?, inSecs?}), ended(sentence),
   * outbox(list of {text, to}), open()}`. */
  constructor({ room, token, pk, name, on }) {
    Object.assign(this, { room, token, pk, name, on });
    this.ws = null;
    this.next = 0;
    this.waiting = new Map();
    this.outbox = [];
    this.onItsWay = null;
    this.attempt = 0;
    this.stopped = false;
    this.timer = null;
  }

  get connected() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN && this.opened;
  }

  start() {
    this.connect();
  }

  /** Stops for good, saying why (a revoked link, a refused token). */
  end(sentence) {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const item of this.outbox) item.reject({ error: `not sent: ${sentence}` });
    this.outbox = [];
    this.tellOutbox();
    if (this.ws) this.ws.close(1000);
    this.on.ended(sentence);
  }

  async connect() {
    if (this.stopped) return;
    this.opened = false;
    this.on.status({ state: 'connecting' });
    let t = null;
    try {
      t = await ticket(this.room, this.token);
    } catch (e) {
      if (e.status === 401 || e.status === 403) {
        return this.end(
          this.token
            ? inviteRefused(e)
            : "This room needs a link with a token: open the link you were given (it ends with #token=…)",
        );
      }
      // A backend without the ticket route (no token): the socket alone.
      if (!(e.status === 404 && !e.details)) return this.retry(e.status ? `${e.status} ${e.error}` : e.error);
    }
    if (this.stopped) return;
    const q = new URLSearchParams();
    if (t && t.ticket) q.set('ticket', t.ticket);
    q.set('user', this.name);
    q.set('_pk', this.pk);
    q.set('deltas', '1');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    let ws;
    try {
      ws = new WebSocket(`${scheme}//${location.host}/api/rooms/${encodeURIComponent(this.room)}/ws?${q}`);
    } catch (e) {
      return this.retry(String(e.message || e));
    }
    this.ws = ws;
    ws.onopen = () => {
      this.opened = true;
      this.attempt = 0;
      this.on.status({ state: 'connected' });
      this.on.open();
      this.sendNextMessage();
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.loseAll();
      if (ev.code === 4401 || ev.code === 4403) return this.end(inviteEnded(ev.code, ev.reason));
      if (!this.stopped) this.retry(ev.reason || (this.opened ? 'the connection closed' : "can't reach the server"));
    };
  }

  retry(reason) {
    if (this.stopped) return;
    this.attempt++;
    const until = Date.now() + backoff(this.attempt);
    const tick = () => {
      const left = until - Date.now();
      if (left <= 0) return this.connect();
      this.on.status({ state: 'reconnecting', reason, inSecs: Math.ceil(left / 1000) });
      this.timer = setTimeout(tick, Math.min(1000, left));
    };
    tick();
  }

  receive(data) {
    let f;
    try {
      f = JSON.parse(data);
    } catch {
      return;
    }
    if (!f || typeof f !== 'object') return;
    if (f.type === 'rpc' && this.waiting.has(f.id)) return this.answer(f);
    if (this.onItsWay) {
      const seen = (m) => m && m.clientId === this.onItsWay;
      const stored =
        (f.type === 'duet_message' && seen(f.message)) ||
        (f.type === 'cf_agent_state' && f.state && Array.isArray(f.state.messages) && f.state.messages.some(seen));
      if (stored) {
        this.onItsWay = null;
        queueMicrotask(() => this.sendNextMessage());
      }
    }
    this.on.frame(f);
  }

  answer(f) {
    const call = this.waiting.get(f.id);
    this.waiting.delete(f.id);
    if (call.clientId && call.clientId === this.onItsWay) {
      this.onItsWay = null;
      queueMicrotask(() => this.sendNextMessage());
    }
    if (f.success) return call.resolve(f.result);
    if ((f.status === 429 || f.status === 503) && call.attempt < MAX_RETRIES) {
      call.attempt++;
      const wait = Math.min(Number(f.retryAfterMs) || 1000, 60000);
      setTimeout(() => {
        if (call.clientId) {
          this.outbox.unshift(call);
          this.sendNextMessage();
        } else if (!this.sendCall(call)) call.reject({ error: 'not sent: not connected' });
      }, wait);
      return;
    }
    call.reject({ status: f.status, error: f.error || 'failed', details: f.details });
  }

  sendCall(call) {
    if (!this.connected) return false;
    const id = `w${++this.next}`;
    this.waiting.set(id, call);
    const args = call.clientId ? [{ ...call.args[0], clientId: call.clientId }] : call.args;
    this.ws.send(JSON.stringify({ type: 'rpc', id, method: call.method, args }));
    return true;
  }

  /** A room operation; resolves with its result, rejects with
   * `{status?, error, details?}`. Not sent while offline. */
  rpc(method, args = []) {
    return new Promise((resolve, reject) => {
      const call = { method, args, resolve, reject, attempt: 0 };
      if (!this.sendCall(call)) reject({ error: 'not sent: not connected to the room right now' });
    });
  }

  /** A message (`{text, to}`): into the outbox, sent in its turn. */
  message(body) {
    return new Promise((resolve, reject) => {
      this.outbox.push({ method: 'message', args: [body], clientId: newClientId(), resolve, reject, attempt: 0 });
      this.sendNextMessage();
      this.tellOutbox();
    });
  }

  sendNextMessage() {
    if (this.onItsWay || !this.connected || !this.outbox.length) return this.tellOutbox();
    const call = this.outbox.shift();
    this.onItsWay = call.clientId;
    this.sendCall(call);
    this.tellOutbox();
  }

  /** A frame that is not an rpc (typing, terminal input); dropped when
   * offline (keys are not typed late). */
  send(frame) {
    if (!this.connected) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** The connection dropped: our message on its way goes back to the
   * front of the outbox; any other call is lost, and said so. */
  loseAll() {
    const lost = [...this.waiting.values()];
    this.waiting.clear();
    const again = [];
    for (const call of lost) {
      if (call.clientId) again.push(call);
      else call.reject({ error: 'the connection dropped before the server answered; it may have been done' });
    }
    this.outbox.unshift(...again);
    this.onItsWay = null;
    this.tellOutbox();
  }

  tellOutbox() {
    this.on.outbox(this.outbox.map((c) => c.args[0]));
  }
}
