// Command output with ANSI escapes as styled spans: SGR colours (16, 256,
// rgb) and bold, dim, italic, underline, inverse; every other escape
// sequence and control character dropped; a bare carriage return starts
// its line again (progress bars).
import { paint } from './palette.js';

const SEQ = /\x1b\[([0-9;:?<=>]*)[ -\/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -\/]*[0-~]?|\r\n|[\r\n]|[\x00-\x08\x0b-\x1f\x7f]/g;

/** The runs of `text` as `[{t, attrs}]` lines: `[[{t, a}], …]`. */
export function parse(text) {
  const lines = [[]];
  let a = {};
  let last = 0;
  const push = (t) => {
    if (!t) return;
    const line = lines[lines.length - 1];
    const prev = line[line.length - 1];
    if (prev && prev.a === a) prev.t += t;
    else line.push({ t, a });
  };
  SEQ.lastIndex = 0;
  for (let m; (m = SEQ.exec(text)); ) {
    push(text.slice(last, m.index));
    last = SEQ.lastIndex;
    const s = m[0];
    if (s === '\n' || s === '\r\n') lines.push([]);
    else if (s === '\r') {
      // Drawn again from the start: what follows replaces it (a trailing
      // \r before the end of the text keeps the line).
      if (last < text.length && text[last] !== '\n') lines[lines.length - 1] = [];
    } else if (m[2] === 'm' && !/[?<=>]/.test(m[1])) a = sgr(a, m[1]);
  }
  push(text.slice(last));
  return lines;
}

/** The attributes after an SGR sequence's parameters. */
export function sgr(prev, params) {
  const a = { ...prev };
  const p = params === '' ? [0] : params.split(/[;:]/).map((x) => (x === '' ? 0 : Number(x)));
  for (let i = 0; i < p.length; i++) {
    const n = p[i];
    if (n === 0) for (const k of Object.keys(a)) delete a[k];
    else if (n === 1) a.b = true;
    else if (n === 2) a.d = true;
    else if (n === 3) a.i = true;
    else if (n === 4) a.u = true;
    else if (n === 7) a.r = true;
    else if (n === 22) delete a.b, delete a.d;
    else if (n === 23) delete a.i;
    else if (n === 24) delete a.u;
    else if (n === 27) delete a.r;
    else if (n >= 30 && n <= 37) a.fg = n - 30;
    else if (n >= 90 && n <= 97) a.fg = n - 90 + 8;
    else if (n === 39) delete a.fg;
    else if (n >= 40 && n <= 47) a.bg = n - 40;
    else if (n >= 100 && n <= 107) a.bg = n - 100 + 8;
    else if (n === 49) delete a.bg;
    else if (n === 38 || n === 48) {
      const key = n === 38 ? 'fg' : 'bg';
      if (p[i + 1] === 5 && i + 2 < p.length) {
        a[key] = p[i + 2] & 255;
        i += 2;
      } else if (p[i + 1] === 2 && i + 4 < p.length) {
        const [r, g, b] = p.slice(i + 2, i + 5).map((v) => Math.max(0, Math.min(255, v | 0)));
        a[key] = '#' + [r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('');
        i += 4;
      } else i = p.length;
    }
  }
  return a;
}

/** A fragment of styled spans (and line breaks) for `text`. */
export function render(text) {
  const frag = document.createDocumentFragment();
  parse(text).forEach((line, i) => {
    if (i > 0) frag.append('\n');
    for (const run of line) {
      if (Object.keys(run.a).length === 0) frag.append(run.t);
      else {
        const span = document.createElement('span');
        span.textContent = run.t;
        frag.append(paint(span, run.a));
      }
    }
  });
  return frag;
}

/** `text` without any escape sequence (for one-line summaries). */
export function strip(text) {
  return parse(text)
    .map((line) => line.map((r) => r.t).join(''))
    .join('\n');
}
