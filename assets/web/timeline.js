// The chat as the room's timeline: messages (the agent's as markdown with
// its command blocks), people's commands with their output and exit
// badges, records as one dim sentence, and the agent's reply streaming.
import { h, clock } from './dom.js';
import * as md from './markdown.js';
import * as blocks from './blocks.js';
import * as ansi from './ansi.js';
import { recordText } from './records.js';

/** How a command ended: `[text, class]`. */
export function badge(done) {
  if (!done) return ['running', 'running'];
  if (done.timedOut) return ['⏱ timed out', 'warn'];
  if (done.interrupted) return ['■ interrupted', 'warn'];
  if (done.error != null && done.exitCode == null) return ['✗ error', 'fail'];
  if (done.exitCode === 0) return ['✓ 0', 'ok'];
  if (done.exitCode == null) return ['✗ killed', 'fail'];
  return [`✗ ${done.exitCode}`, 'fail'];
}

function head(ts, who, whoClass, ...rest) {
  return h('div', { class: 'head' }, h('span', { class: 'time' }, clock(ts)), h('span', { class: `who ${whoClass}` }, who), ...rest);
}

function outputPre(text) {
  const pre = h('pre', { class: 'output' });
  pre.append(ansi.render(text));
  return pre;
}

function blockEl(b) {
  const el = h('div', { class: `block ${b.kind}` }, h('div', { class: 'block-cmd' }, b.cmd));
  if (b.kind === 'error') el.append(h('pre', { class: 'output' }, b.output));
  else if (b.output) el.append(outputPre(b.output));
  return el;
}

function agentBody(list) {
  const body = h('div', { class: 'body' });
  for (const b of list) body.append(b.kind === 'prose' ? md.render(b.text) : blockEl(b));
  return body;
}

function usageText(u) {
  if (!u || typeof u !== 'object') return null;
  const n = (x) => (Number.isFinite(x) ? x.toLocaleString('en-US') : '?');
  const parts = [`${n(u.promptTokens)} in · ${n(u.completionTokens)} out tokens${u.estimated ? ' (estimated)' : ''}`];
  if (Number.isFinite(u.rounds)) parts.push(`${u.rounds} round${u.rounds === 1 ? '' : 's'}`);
  return parts.join(' · ');
}

function messageEl(m) {
  const ts = Number(m.ts) || 0;
  if (m.role === 'system' && m.event && typeof m.event === 'object') {
    return h('li', { class: 'record', 'data-kind': String(m.event.kind ?? '') }, h('span', { class: 'time' }, clock(ts)), ' · ', recordText(m));
  }
  const text = String(m.text ?? '');
  if (m.role === 'agent') {
    const li = h('li', { class: 'message agent' }, head(ts, '✦ agent', 'agent'));
    li.append(agentBody(blocks.parse(text, m.runs)));
    if (m.cancelledBy)
      li.append(h('p', { class: 'cancelled' }, `■ cancelled by ${m.cancelledBy}${text.trim() ? '' : ' before the agent said anything'}`));
    const usage = usageText(m.usage);
    if (usage) li.append(h('p', { class: 'usage' }, usage));
    return li;
  }
  if (m.role === 'user') {
    const who = String(m.userId ?? 'someone');
    const mark = m.to === 'room' ? h('span', { class: 'mark' }, '→ room') : h('span', { class: 'mark' }, '→ agent');
    return h('li', { class: 'message user' }, head(ts, who, 'person', mark), h('div', { class: 'body plain' }, text));
  }
  return h('li', { class: 'message system' }, head(ts, '· system', 'system'), h('div', { class: 'body plain' }, text));
}

function execEl(run) {
  const [words, cls] = badge(run.done);
  const li = h(
    'li',
    { class: 'command', 'data-exec': run.execId },
    head(run.ts, run.by, 'person', h('span', { class: 'dim' }, '$'), h('code', { class: 'cmd' }, run.cmd), h('span', { class: `badge ${cls}` }, words)),
  );
  if (run.out) li.append(outputPre(run.out));
  if (run.truncated) li.append(h('p', { class: 'mark' }, 'output cut: the room keeps 16 KiB per stream'));
  if (run.done && run.done.error && !run.done.interrupted) li.append(h('p', { class: 'mark' }, String(run.done.error)));
  return li;
}

/** What the agent's turn is doing, as its badge says. */
function turnStatus(turn, agentRuns, waiting) {
  if (turn.error) return ['the model failed', 'fail'];
  if (waiting) return ['waiting for approval', 'warn'];
  if (agentRuns.some((r) => !r.done)) return ['running a command', 'running'];
  return turn.ended ? ['finishing…', 'running'] : ['replying…', 'running'];
}

function turnEl(turn, agentRuns, waiting) {
  const status = turnStatus(turn, agentRuns, waiting);
  const li = h('li', { class: 'live-turn', 'data-turn': String(turn.turnId ?? ''), 'aria-busy': String(!turn.ended) }, head(turn.started, '✦ agent', 'agent', h('span', { class: `badge ${status[1]}` }, status[0])));
  if (!turn.text.trim() && !turn.error) li.append(h('p', { class: 'thinking' }, 'thinking…'));
  const list = blocks.parseStreaming(turn.text);
  for (const b of list) {
    if (b.kind !== 'output') continue;
    const run = agentRuns.find((r) => r.cmd === b.cmd);
    if (run) b.output = run.out || (run.done ? '' : '…');
  }
  li.append(agentBody(list));
  if (turn.error) li.append(h('p', { class: 'error' }, turn.error));
  return li;
}

/** Draws the room's timeline into `el`, keeping unchanged entries. */
export class Timeline {
  constructor(el) {
    this.el = el;
    this.drawn = new Map(); // key → {sig, node}
  }

  render(room) {
    const entries = [];
    for (const m of room.messages) entries.push({ key: `m:${m.id}`, ts: Number(m.ts) || 0, sig: m, draw: () => messageEl(m) });
    const agentRuns = [];
    for (const run of room.execs.values()) {
      if (run.source === 'agent') {
        if (run.live) agentRuns.push(run);
        continue;
      }
      const sig = `${run.out.length}|${run.done ? badge(run.done)[0] : ''}|${run.ts}`;
      entries.push({ key: `x:${run.execId}`, ts: run.ts, sig, draw: () => execEl(run) });
    }
    entries.sort((a, b) => a.ts - b.ts);
    if (room.turn) {
      const t = room.turn;
      const waiting = room.approvals.some((a) => a.turnId === t.turnId);
      const sig = `${t.text.length}|${t.ended}|${t.error}|${waiting}|${agentRuns.map((r) => r.out.length + (r.done ? 'd' : '')).join(',')}`;
      entries.push({ key: `t:${t.turnId}`, sig, draw: () => turnEl(t, agentRuns, waiting) });
    }
    const atBottom = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
    const keep = new Set(entries.map((e) => e.key));
    for (const [key, d] of this.drawn) if (!keep.has(key)) (d.node.remove(), this.drawn.delete(key));
    let prev = null;
    for (const e of entries) {
      let d = this.drawn.get(e.key);
      if (!d || d.sig !== e.sig) {
        const node = e.draw();
        if (d) d.node.replaceWith(node);
        d = { sig: e.sig, node };
        this.drawn.set(e.key, d);
      }
      const want = prev ? prev.nextSibling : this.el.firstChild;
      if (want !== d.node) this.el.insertBefore(d.node, want);
      prev = d.node;
    }
    if (atBottom) this.el.scrollTop = this.el.scrollHeight;
  }
}
