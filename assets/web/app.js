// The page's entry: `/` (type a room or paste a link) or `/r/{room}` (the
// room: chat, timeline, people, the terminal), wired to the room's socket.
import { byId } from './dom.js';
import * as session from './session.js';
import { RoomSocket } from './socket.js';
import { Room } from './state.js';
import { Timeline } from './timeline.js';
import { renderPeople, typingLine, renderApprovals } from './people.js';
import { TermPane } from './termpane.js';
import { Composer } from './composer.js';
import { refusal } from './explain.js';

const notice = {
  show(sentence, bad = false) {
    byId('notice-text').textContent = sentence;
    byId('notice').classList.toggle('bad', bad);
    byId('notice').hidden = false;
  },
  hide() {
    if (!window.duetEnded) byId('notice').hidden = true;
  },
};
byId('notice-close').addEventListener('click', () => notice.hide());

/** A failure (`{status?, error, details?}`) said as a sentence. */
function say(err, bad = true) {
  notice.show(err && err.status ? refusal(err) : String((err && err.error) || err), bad);
}

function home() {
  byId('home').hidden = false;
  byId('status').textContent = '';
  const name = byId('join-name');
  name.value = session.savedName() || '';
  byId('join-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const join = session.readJoin(byId('join-room').value);
    if (!join) {
      byId('join-error').textContent =
        'That is neither a room (letters, digits, _ and -) nor a room link (…/r/ROOM#token=…)';
      return;
    }
    if (name.value.trim()) session.saveName(name.value.trim().slice(0, 32));
    const path = `/r/${encodeURIComponent(join.room)}`;
    if (join.origin && join.origin !== location.origin) {
      location.assign(`${join.origin}${path}${join.token ? `#token=${encodeURIComponent(join.token)}` : ''}`);
      return;
    }
    if (join.token) session.keepToken(join.room, join.token);
    location.assign(path);
  });
  byId('join-room').focus();
}

function room(roomId) {
  const token = session.takeToken(roomId);
  document.title = `${roomId} · Duet`;
  byId('room-name').textContent = roomId;
  byId('room').hidden = false;
  const pk = session.connectionId();
  const chosen = session.savedName();
  const nameInput = byId('name');
  nameInput.value = chosen || 'guest';
  byId('name-form').hidden = false;
  if (!chosen) notice.show('You join as "guest": type your name at the top and press Rename to be known by it.');

  const state = new Room();
  const timeline = new Timeline(byId('chat'));
  let pending = false;
  const draw = () => {
    pending = false;
    timeline.render(state);
    // From opening the link to the room drawn (docs/web.md).
    if (state.state && !performance.getEntriesByName('duet:first-frame').length) performance.mark('duet:first-frame');
    renderPeople(byId('people'), state);
    byId('typing').textContent = typingLine(state);
    renderApprovals(byId('approvals'), state, decide);
  };
  const schedule = () => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(draw);
    }
  };
  setInterval(schedule, 1000);

  const socket = new RoomSocket({
    room: roomId,
    token,
    pk,
    name: nameInput.value,
    on: {
      frame: (f) => {
        onFrame(f);
        schedule();
      },
      status: (s) => {
        const el = byId('status');
        el.className = s.state === 'connected' ? 'ok' : s.state === 'reconnecting' ? 'bad' : '';
        el.textContent =
          s.state === 'connected'
            ? 'connected'
            : s.state === 'reconnecting'
              ? `reconnecting in ${s.inSecs} s… (${s.reason})`
              : 'connecting…';
      },
      ended: (sentence) => {
        window.duetEnded = true;
        byId('status').className = 'bad';
        byId('status').textContent = 'offline';
        notice.show(sentence, true);
        document.body.dataset.ended = 'true';
      },
      outbox: (list) => {
        const el = byId('outbox');
        el.hidden = list.length === 0;
        el.textContent = list.length ? `${list.length} message${list.length === 1 ? '' : 's'} waiting to be sent` : '';
      },
      open: () => term.reconnected(),
    },
  });
  const term = new TermPane(socket, say);

  function decide(approvalId, approved) {
    socket.rpc('approve', [{ approvalId, approved }]).catch((err) => say(err));
  }

  let lastErrorNote = 0;
  function onFrame(f) {
    switch (f.type) {
      case 'cf_agent_state':
        if (f.state && typeof f.state === 'object') {
          state.full(f.state);
          term.sync(f.state.terminal);
        }
        break;
      case 'duet_message':
        state.message(f.message);
        break;
      case 'duet_state':
        state.patch(f.patch);
        if (f.patch && 'terminal' in f.patch) term.sync(f.patch.terminal);
        break;
      case 'duet_presence':
        state.presence(f.users);
        break;
      case 'duet_presence_delta':
        state.presenceDelta(f);
        break;
      case 'duet_you':
        state.you = f;
        byId('you').textContent = `${f.name} · ${f.role}`;
        byId('you').dataset.role = String(f.role ?? '');
        if (document.activeElement !== nameInput) nameInput.value = String(f.name ?? '');
        socket.name = String(f.name ?? socket.name);
        // A name the invite fixed, or one chosen before: nothing to ask.
        if (f.name !== 'guest' && /guest/.test(byId('notice-text').textContent)) notice.hide();
        break;
      case 'duet_typing':
        state.typed(f);
        break;
      case 'duet_ai':
        state.ai(f);
        break;
      case 'duet_exec':
        state.exec(f);
        break;
      case 'duet_approval':
        state.approval(f);
        break;
      case 'duet_term':
        term.frame(f);
        break;
      case 'duet_cleanup':
        notice.show(`${f.by} cleaned up the room (history and sandbox)`);
        break;
      case 'duet_error': {
        // A refused terminal key or frame: said once a few seconds.
        const now = Date.now();
        if (now - lastErrorNote > 3000) {
          lastErrorNote = now;
          const role = state.you && state.you.role;
          const why = `the server refused it (${f.error})`;
          notice.show(f.error === 'forbidden' && role ? `You are ${role === 'owner' ? 'an' : 'a'} ${role}: ${why}` : capital(why), true);
        }
        break;
      }
      default:
        break;
    }
  }

  new Composer(
    {
      exec: (cmd) => {
        notice.hide();
        socket.rpc('exec', [{ cmd }]).catch((err) => say(err));
      },
      message: (body) => {
        notice.hide();
        socket.message(body).catch((err) => say(err));
      },
      typing: () => socket.send({ type: 'duet_typing' }),
      stop: () => {
        const run = state.myRunning(pk);
        if (run) {
          socket.rpc('interrupt', [{ execId: run.execId }]).catch((err) => say(err));
          notice.show(`interrupting your \`${run.cmd}\``);
          return;
        }
        const t = state.turn;
        if (t && !t.ended && t.byConnection === pk) {
          socket.rpc('cancel', [{ turnId: t.turnId }]).catch((err) => say(err));
          notice.show("cancelling the agent's turn you started");
          return;
        }
        notice.show('Nothing of yours is running: Esc stops your own command or the agent turn you started.');
      },
    },
    say,
  );

  byId('name-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const name = nameInput.value.trim();
    if (!name) return;
    socket
      .rpc('rename', [{ name }])
      .then((r) => {
        const now = (r && r.name) || name;
        session.saveName(now);
        socket.name = now;
        notice.hide();
      })
      .catch((err) => say(err));
  });

  socket.start();
}

const capital = (s) => s.charAt(0).toUpperCase() + s.slice(1);

const roomId = session.roomOfPath(location.pathname);
if (roomId) room(roomId);
else {
  if (location.pathname !== '/') byId('join-error').textContent = `No room at ${location.pathname}: type a room or paste a link.`;
  home();
}
