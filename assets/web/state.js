// What the page knows of the room: the state as received (full, then
// message and patch deltas), the live parts (running commands, the
// agent's streaming reply, who is here and who types, this socket).

const MAX_MESSAGES = 100;
const MAX_LIVE_OUTPUT = 256 * 1024;

export class Room {
  constructor() {
    this.state = null;
    this.messages = [];
    this.execs = new Map(); // execId → {execId, cmd, by, source, byConnection, stdout, stderr, done?, ts}
    this.turn = null; // {turnId, text, byConnection, started, ended?, error?}
    this.users = [];
    this.you = null;
    this.typing = new Map(); // connection id → {name, term, until}
    this.approvals = [];
    this.version = 0;
  }

  /** A full state (on connect, after a cleanup). */
  full(state) {
    this.state = state || {};
    this.messages = Array.isArray(state.messages) ? state.messages.slice(-MAX_MESSAGES) : [];
    this.approvals = Array.isArray(state.approvals) ? state.approvals.slice() : [];
    const records = Array.isArray(state.execs) ? state.execs : [];
    // Stored commands replace what streamed; a command still shown as
    // running that started before a stored one has ended too.
    const newest = records.reduce((m, r) => Math.max(m, Number(r.ts) || 0), 0);
    for (const [id, run] of this.execs) {
      if (!run.done && (records.some((r) => r.execId === id) || run.ts <= newest)) this.execs.delete(id);
      else if (run.done) this.execs.delete(id);
    }
    for (const r of records) this.execs.set(r.execId, fromRecord(r));
    if (this.turn && this.turn.ended) this.turn = null;
    this.version++;
  }

  /** `duet_message`: replace by id, or append keeping the last 100. */
  message(m) {
    if (!m || typeof m !== 'object') return;
    const at = this.messages.findIndex((x) => x.id === m.id);
    if (at >= 0) this.messages[at] = m;
    else {
      this.messages.push(m);
      if (this.messages.length > MAX_MESSAGES) this.messages.splice(0, this.messages.length - MAX_MESSAGES);
    }
    // The turn's stored reply ends it (a cancelled turn may send no
    // `end`); a system message ends one that ended in an error.
    if (this.turn && (m.role === 'agent' || (m.role === 'system' && this.turn.ended))) this.turn = null;
    this.version++;
  }

  patch(p) {
    if (!p || typeof p !== 'object') return;
    this.state = { ...(this.state || {}), ...p };
    if (Array.isArray(p.approvals)) this.approvals = p.approvals.slice();
    this.version++;
  }

  exec(f) {
    const id = f.execId;
    if (typeof id !== 'string') return;
    if (f.phase === 'start') {
      this.execs.set(id, {
        execId: id, cmd: String(f.cmd ?? ''), by: String(f.by ?? ''), source: f.source,
        byConnection: f.byConnection, stdout: '', stderr: '', out: '', ts: Date.now(), live: true,
      });
    } else {
      const run = this.execs.get(id);
      if (!run) return;
      if (f.phase === 'stdout' || f.phase === 'stderr') {
        const data = String(f.data ?? '');
        run[f.phase] += data;
        run.out += data;
        if (run.out.length > MAX_LIVE_OUTPUT) run.out = run.out.slice(-MAX_LIVE_OUTPUT);
      } else if (f.phase === 'complete') {
        run.done = {
          exitCode: f.exitCode ?? null, timedOut: !!f.timedOut, interrupted: !!f.interrupted,
          error: f.error, duration: f.duration,
        };
      }
    }
    this.version++;
  }

  ai(f) {
    if (f.phase === 'start') {
      if (this.turn && this.turn.turnId === f.turnId) {
        if (this.turn.text.trim()) this.turn.text += '\n\n';
        this.turn.ended = false;
      } else {
        this.turn = { turnId: f.turnId, text: '', byConnection: f.byConnection, started: Date.now() };
      }
    } else if (!this.turn || this.turn.turnId !== f.turnId) {
      return;
    } else if (f.phase === 'delta') {
      this.turn.text += String(f.text ?? '');
    } else if (f.phase === 'end') {
      this.turn.ended = true;
    } else if (f.phase === 'error') {
      this.turn.ended = true;
      this.turn.error = String(f.error ?? 'the model failed');
    }
    this.version++;
  }

  approval(f) {
    if (f.phase === 'request') {
      if (!this.approvals.some((a) => a.approvalId === f.approvalId))
        this.approvals.push({ approvalId: f.approvalId, turnId: f.turnId, cmd: String(f.cmd ?? '') });
    } else if (f.phase === 'decided' || f.phase === 'withdrawn') {
      this.approvals = this.approvals.filter((a) => a.approvalId !== f.approvalId);
    }
    this.version++;
  }

  presence(users) {
    this.users = Array.isArray(users) ? users.filter((u) => u && typeof u === 'object') : [];
  }

  presenceDelta(f) {
    const byId = new Map(this.users.map((u) => [u.id, u]));
    for (const id of Array.isArray(f.left) ? f.left : []) byId.delete(id);
    for (const u of [...(Array.isArray(f.joined) ? f.joined : []), ...(Array.isArray(f.changed) ? f.changed : [])])
      if (u && typeof u === 'object') byId.set(u.id, u);
    this.users = [...byId.values()];
  }

  typed(f, now = Date.now()) {
    if (!f.id || (this.you && f.id === this.you.id)) return;
    this.typing.set(f.id, { name: String(f.name ?? 'someone'), term: !!f.termId, until: now + 3500 });
  }

  /** Who types now (expired ones dropped). */
  typers(now = Date.now()) {
    for (const [id, t] of this.typing) if (t.until < now) this.typing.delete(id);
    return [...this.typing.entries()];
  }

  /** The running command this socket started, if any. */
  myRunning(pk) {
    for (const run of this.execs.values()) if (!run.done && run.live && run.byConnection === pk) return run;
    return null;
  }
}

export function fromRecord(r) {
  return {
    execId: r.execId, cmd: String(r.cmd ?? ''), by: String(r.by ?? ''), source: r.source,
    stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? ''),
    out: String(r.stdout ?? '') + (r.stdout && r.stderr && !String(r.stdout).endsWith('\n') ? '\n' : '') + String(r.stderr ?? ''),
    ts: Number(r.ts) || 0, truncated: !!r.truncated,
    done: { exitCode: r.exitCode ?? null, timedOut: !!r.timedOut, interrupted: !!r.interrupted, error: r.error, duration: r.duration },
  };
}
