// The shared terminal drawn from the server's `screen` frames: a grid of
// lines of styled spans at the terminal's size, and its cursor. Text is
// only ever set as text.
import { paint } from './palette.js';

/** Columns a character takes: 2 for wide (East Asian, emoji), else 1. */
export function cellWidth(ch) {
  const c = ch.codePointAt(0);
  return (c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf && c !== 0x303f) ||
    (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe30 && c <= 0xfe4f) ||
    (c >= 0xff00 && c <= 0xff60) || (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1faff) ||
    (c >= 0x20000 && c <= 0x3fffd)
    ? 2
    : 1;
}

const validSpan = (s) => s && typeof s === 'object' && typeof s.t === 'string';

export class Screen {
  constructor(el) {
    this.el = el;
    this.termId = null;
    this.cols = 0;
    this.rows = 0;
    this.lines = [];
    this.rowEls = [];
    this.cursor = { x: 0, y: 0, visible: false };
    this.modes = { altScreen: false, appCursor: false, bracketedPaste: false };
  }

  /** Forgets the screen (the terminal ended, or another one opened). */
  reset(termId = null) {
    this.termId = termId;
    this.lines = [];
    this.size(0, 0);
  }

  size(cols, rows) {
    this.cols = Math.max(0, Math.min(500, cols | 0));
    this.rows = Math.max(0, Math.min(200, rows | 0));
    this.el.style.width = this.cols ? `calc(${this.cols}ch + 12px)` : '';
    this.lines.length = this.rows;
    while (this.rowEls.length > this.rows) this.rowEls.pop().remove();
    while (this.rowEls.length < this.rows) {
      const row = document.createElement('div');
      row.className = 'row';
      row.dataset.y = String(this.rowEls.length);
      this.el.append(row);
      this.rowEls.push(row);
    }
    for (let y = 0; y < this.rows; y++) this.draw(y);
  }

  /** A `duet_term` frame of phase `screen`. */
  frame(f) {
    if (f.cols !== this.cols || f.rows !== this.rows) this.size(f.cols, f.rows);
    if (f.full) this.lines = new Array(this.rows).fill(null);
    const dirty = new Set();
    if (f.full) for (let y = 0; y < this.rows; y++) dirty.add(y);
    for (const line of Array.isArray(f.lines) ? f.lines : []) {
      const y = line && line.y;
      if (!Number.isInteger(y) || y < 0 || y >= this.rows) continue;
      this.lines[y] = Array.isArray(line.spans) ? line.spans.filter(validSpan) : [];
      dirty.add(y);
    }
    if (f.modes && typeof f.modes === 'object') this.modes = { ...this.modes, ...f.modes };
    if (f.cursor && typeof f.cursor === 'object') {
      dirty.add(this.cursor.y);
      this.cursor = { x: f.cursor.x | 0, y: f.cursor.y | 0, visible: !!f.cursor.visible };
      dirty.add(this.cursor.y);
    }
    for (const y of dirty) if (y >= 0 && y < this.rows) this.draw(y);
  }

  /** The text of the screen, one line a row (for tests and copying). */
  text() {
    return this.lines.map((spans) => (spans || []).map((s) => s.t).join('')).join('\n');
  }

  draw(y) {
    const row = this.rowEls[y];
    if (!row) return;
    const spans = this.lines[y] || [];
    const frag = document.createDocumentFragment();
    const cur = this.cursor.visible && this.cursor.y === y ? this.cursor.x : -1;
    let col = 0;
    let drawnCursor = false;
    for (const s of spans) {
      if (cur < col || drawnCursor || cur >= col + textWidth(s.t)) {
        frag.append(piece(s.t, s));
        col += textWidth(s.t);
        continue;
      }
      // The cursor is inside this span: before, the cell, after.
      let before = '';
      let at = '';
      let after = '';
      let c = col;
      for (const ch of s.t) {
        if (at || c + cellWidth(ch) <= cur) {
          if (at) after += ch;
          else before += ch;
        } else at = ch;
        c += cellWidth(ch);
      }
      if (before) frag.append(piece(before, s));
      frag.append(cursorCell(at || ' ', s));
      if (after) frag.append(piece(after, s));
      col = c;
      drawnCursor = true;
    }
    if (cur >= 0 && !drawnCursor && cur < Math.max(this.cols, 1)) {
      if (cur > col) frag.append(' '.repeat(cur - col));
      frag.append(cursorCell(' ', {}));
    }
    row.replaceChildren(frag);
  }
}

function textWidth(t) {
  let w = 0;
  for (const ch of t) w += cellWidth(ch);
  return w;
}

function piece(text, s) {
  const plain = s.fg == null && s.bg == null && !s.b && !s.d && !s.i && !s.u && !s.r;
  if (plain) return document.createTextNode(text);
  const span = document.createElement('span');
  span.textContent = text;
  return paint(span, s);
}

function cursorCell(ch, s) {
  const span = document.createElement('span');
  span.textContent = ch;
  paint(span, s);
  span.classList.add('cursor');
  return span;
}
