// The terminal pane: attaches to the room's terminal with screen frames
// (no size: the page never counts for the terminal's size), opens one on
// request, and sends a writer's keys and pastes as terminal input.
import { Screen } from './terminal.js';
import { keyBytes, pasteBytes, base64Parts } from './keys.js';
import { byId } from './dom.js';

export class TermPane {
  /** `socket`: a RoomSocket; `say(sentence, bad)`: a note to the person. */
  constructor(socket, say) {
    this.socket = socket;
    this.say = say;
    this.el = byId('terminal');
    this.input = byId('terminal-input');
    this.note = byId('terminal-note');
    this.sizeEl = byId('terminal-size');
    this.openBtn = byId('terminal-open');
    this.screen = new Screen(this.el);
    this.attached = null; // termId
    this.attaching = false;
    this.running = null; // the state's terminal
    this.openBtn.addEventListener('click', () => this.attach(true));
    this.el.addEventListener('mousedown', (e) => {
      e.preventDefault();
      this.input.focus({ preventScroll: true });
    });
    this.input.addEventListener('focus', () => this.el.classList.add('focused'));
    this.input.addEventListener('blur', () => this.el.classList.remove('focused'));
    this.input.addEventListener('keydown', (e) => this.key(e));
    this.input.addEventListener('input', (e) => this.typed(e));
    this.input.addEventListener('compositionend', (e) => {
      if (e.data) this.write(e.data);
      this.input.value = '';
    });
    this.input.addEventListener('paste', (e) => {
      e.preventDefault();
      const text = e.clipboardData ? e.clipboardData.getData('text/plain') : '';
      if (text) this.write(pasteBytes(text, this.screen.modes));
    });
    this.show();
  }

  /** The room state's `terminal` (null: none runs). */
  sync(terminal) {
    this.running = terminal && typeof terminal === 'object' ? terminal : null;
    if (!this.running) {
      this.attached = null;
    } else if (this.attached !== this.running.termId && !this.attaching) {
      this.attach(false);
    }
    this.show();
  }

  /** Connected again: attach anew (a fresh full screen follows). */
  reconnected() {
    this.attached = null;
    this.attaching = false;
  }

  async attach(opening) {
    if (this.attaching) return;
    this.attaching = true;
    try {
      const r = await this.socket.rpc('term_open', [{ screen: true }]);
      if (r && r.termId) {
        if (this.screen.termId !== r.termId) this.screen.reset(r.termId);
        this.attached = r.termId;
        this.screen.size(r.cols, r.rows);
        this.running = { termId: r.termId, cols: r.cols, rows: r.rows };
      }
    } catch (err) {
      if (opening || err.status) this.say(err, true);
    } finally {
      this.attaching = false;
      this.show();
    }
  }

  /** A `duet_term` frame. */
  frame(f) {
    if (f.phase === 'open') {
      this.running = { termId: f.termId, cols: f.cols, rows: f.rows };
      if (this.attached !== f.termId) this.attach(false);
    } else if (f.phase === 'screen') {
      if (f.termId !== this.attached && this.attached) return;
      if (this.screen.termId !== f.termId) this.screen.reset(f.termId);
      this.screen.frame(f);
    } else if (f.phase === 'resize') {
      if (this.running && f.termId === this.running.termId) Object.assign(this.running, { cols: f.cols, rows: f.rows });
      if (f.termId === this.attached) this.screen.size(f.cols, f.rows);
    } else if (f.phase === 'exit') {
      if (this.running && this.running.termId === f.termId) this.running = null;
      if (this.attached === f.termId) this.attached = null;
      this.lastExit = f.exitCode;
    }
    this.show();
  }

  show() {
    const on = !!(this.running && this.attached === this.running.termId);
    this.el.hidden = !on;
    this.openBtn.hidden = !!this.running;
    const t = this.running;
    this.sizeEl.textContent = t ? `${t.cols}×${t.rows}` : '';
    this.note.textContent = t
      ? on
        ? 'Click the terminal to type · Shift+Esc leaves it'
        : 'Attaching…'
      : this.lastExit !== undefined
        ? `The terminal ended${this.lastExit == null ? '' : ` (exit ${this.lastExit})`}. No terminal runs in this room.`
        : 'No terminal runs in this room.';
  }

  key(e) {
    if (e.key === 'Escape' && e.shiftKey) {
      e.preventDefault();
      byId('input').focus();
      return;
    }
    const bytes = keyBytes(e, this.screen.modes);
    if (bytes == null) return;
    // Copy with a selection, and paste, stay the browser's.
    if (e.ctrlKey && e.shiftKey && /^[cv]$/i.test(e.key)) return;
    e.preventDefault();
    this.write(bytes);
  }

  typed(e) {
    if (e.isComposing) return;
    const text = this.input.value;
    this.input.value = '';
    if (text) this.write(text.replace(/\n/g, '\r'));
  }

  write(text) {
    const termId = this.attached;
    if (!termId) {
      this.say({ error: 'No terminal is attached: open it first' }, true);
      return;
    }
    for (const data of base64Parts(text)) {
      if (!this.socket.send({ type: 'duet_term_input', termId, data })) {
        this.say({ error: 'not sent: not connected to the room right now' }, true);
        return;
      }
    }
  }
}
