// Who is here (with roles), who types, and the agent's commands waiting
// for a person's approval.
import { h } from './dom.js';

export function renderPeople(el, room) {
  const typing = new Map(room.typers());
  const you = room.you && room.you.id;
  const items = room.users
    .slice()
    .sort((a, b) => (Number(a.since) || 0) - (Number(b.since) || 0))
    .map((u) => {
      const t = typing.get(u.id);
      return h(
        'li',
        { class: `person${u.id === you ? ' me' : ''}`, 'data-id': String(u.id ?? ''), 'data-role': String(u.role ?? '') },
        h('span', { class: 'name' }, String(u.name ?? '?')),
        ' ',
        h('span', { class: 'role' }, `${u.role ?? ''}${u.id === you ? ' · you' : ''}`),
        t ? h('span', { class: 'typing-mark' }, t.term ? ' ⌨ terminal' : ' ✎') : null,
      );
    });
  el.replaceChildren(...items);
}

export function typingLine(room) {
  const names = room.typers().map(([, t]) => t);
  const chat = names.filter((t) => !t.term).map((t) => t.name);
  const term = names.filter((t) => t.term).map((t) => t.name);
  const say = (list) => (list.length === 1 ? `${list[0]} is` : `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]} are`);
  const parts = [];
  if (chat.length) parts.push(`${say(chat)} typing…`);
  if (term.length) parts.push(`${say(term)} typing into the terminal`);
  return parts.join(' · ');
}

/** The approvals panel; `decide(approvalId, approved)` answers one. */
export function renderApprovals(el, room, decide) {
  const sig = room.approvals.map((a) => a.approvalId).join(',');
  if (el.dataset.sig === sig) return;
  el.dataset.sig = sig;
  el.replaceChildren(
    ...room.approvals.map((a) =>
      h(
        'div',
        { class: 'approval', 'data-approval': String(a.approvalId) },
        h('span', {}, 'The agent asks to run '),
        h('code', {}, a.cmd),
        h('button', { type: 'button', class: 'approve', onclick: () => decide(a.approvalId, true) }, 'Approve'),
        h('button', { type: 'button', class: 'deny', onclick: () => decide(a.approvalId, false) }, 'Deny'),
      ),
    ),
  );
}
