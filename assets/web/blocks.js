// An agent reply's Output/Error blocks (docs/protocol.md "Output
// blocks"), read as the terminal client reads them: from `runs` where a
// message has them (each at its `at`), else from the text; and the live
// reply's `<run>` tags.

const OPEN = '<run>';
const CLOSE = '</run>';
const SEP = '\n\n';
const NO_OUTPUT = '[no output]';
const SUMMARY_CHARS = 500;

/** Blocks `{kind: 'prose'|'output'|'error', text?, cmd?, output?}`. */
export function parse(text, runs) {
  return Array.isArray(runs) && runs.length ? withRuns(text, runs) : fromText(text);
}

/** The model's text while it streams: prose split where each `<run>`
 * stood, the command there as a block without output yet. */
export function parseStreaming(text) {
  const out = [];
  let rest = text;
  for (let open; (open = rest.indexOf(OPEN)) !== -1; ) {
    prose(out, rest.slice(0, open));
    const inner = rest.slice(open + OPEN.length);
    const close = inner.indexOf(CLOSE);
    const cmd = (close === -1 ? inner : inner.slice(0, close)).trim();
    if (cmd) out.push({ kind: 'output', cmd, output: '', live: true });
    rest = close === -1 ? '' : inner.slice(close + CLOSE.length);
  }
  prose(out, rest);
  return out;
}

function prose(out, text) {
  const t = text.trim();
  if (t) out.push({ kind: 'prose', text: t });
}

const isError = (run) => run.error != null && run.exitCode == null;

function summary(run) {
  const src = run.stdout || run.stderr || '';
  if (!src) return NO_OUTPUT;
  return Array.from(src).slice(0, SUMMARY_CHARS).join('');
}

function parts(run) {
  return isError(run) ? ['Error (', String(run.error)] : ['Output (', summary(run)];
}

function runOutput(run) {
  const out = run.stdout || '';
  const err = run.stderr || '';
  if (!out && !err) return NO_OUTPUT;
  if (!err) return out;
  if (!out) return err;
  return (out.endsWith('\n') ? out : out + '\n') + err;
}

function runBlock(run) {
  return isError(run)
    ? { kind: 'error', cmd: run.cmd, output: String(run.error) }
    : { kind: 'output', cmd: run.cmd, output: runOutput(run), exitCode: run.exitCode };
}

function findHeader(text, from, header) {
  for (let search = from; ; ) {
    const at = text.indexOf(header, search);
    if (at === -1) return null;
    const end = at + header.length;
    const body = text[end] === '\n' ? end + 1 : end === text.length ? end : -1;
    if (body !== -1) {
      if (at === 0 && from === 0) return [0, body];
      if (at >= from + SEP.length && text.slice(0, at).endsWith(SEP)) return [at - SEP.length, body];
    }
    search = at + 1;
  }
}

function spansOf(text, runs) {
  const spans = [];
  let cursor = 0;
  runs.forEach((run, i) => {
    const [head, body] = parts(run);
    const found = findHeader(text, cursor, `${head}${run.cmd}):`);
    if (!found) return spans.push(null);
    const [start, bodyStart] = found;
    const after = text.slice(bodyStart);
    let end;
    if (after.startsWith(body)) end = bodyStart + body.length;
    else if (after.startsWith(body.trimEnd())) end = bodyStart + body.trimEnd().length;
    else {
      const next = runs[i + 1];
      const nf = next && findHeader(text, bodyStart, `${parts(next)[0]}${next.cmd}):`);
      end = nf ? nf[0] : text.length;
    }
    spans.push([start, end]);
    cursor = end;
  });
  return spans;
}

/** The UTF-16 index of the `chars`-th code point (its end when exactly). */
function indexOfChar(text, chars) {
  if (!Number.isInteger(chars) || chars < 0) return null;
  let n = 0;
  for (let i = 0; i <= text.length; ) {
    if (n === chars) return i;
    if (i === text.length) break;
    i += text.codePointAt(i) > 0xffff ? 2 : 1;
    n++;
  }
  return null;
}

function withRuns(text, runs) {
  const spans = spansOf(text, runs);
  const real = spans.filter(Boolean);
  const out = [];
  let cursor = 0;
  let last = 0;
  runs.forEach((run, i) => {
    let place = null;
    const at = indexOfChar(text, run.at);
    if (at != null) {
      const inside = real.find(([s, e]) => s < at && at < e);
      place = inside ? inside[1] : at;
    }
    if (place == null && spans[i]) place = spans[i][0];
    if (place == null) place = last;
    last = Math.max(place, last);
    proseOutside(out, text, cursor, last, real);
    out.push(runBlock(run));
    cursor = last;
  });
  proseOutside(out, text, cursor, text.length, real);
  return out;
}

function proseOutside(out, text, from, to, spans) {
  const pieces = [];
  let at = from;
  for (const [s, e] of spans) {
    if (e <= at || s >= to) continue;
    if (s > at) pieces.push(text.slice(at, s));
    at = Math.max(e, at);
  }
  if (at < to) pieces.push(text.slice(at, to));
  prose(out, pieces.map((p) => p.trim()).filter(Boolean).join('\n\n'));
}

const HEAD = /(^|\n\n)(Output|Error) \(/g;

function fromText(text) {
  const out = [];
  const heads = [];
  HEAD.lastIndex = 0;
  for (let m; (m = HEAD.exec(text)); ) {
    const start = m.index + m[1].length;
    const cmdStart = start + m[2].length + 2;
    // The command ends at the first `):` followed by a line end or the end.
    let end = -1;
    for (let s = cmdStart; (s = text.indexOf('):', s)) !== -1; s++) {
      if (s + 2 === text.length || text[s + 2] === '\n') {
        end = s;
        break;
      }
    }
    if (end === -1) continue;
    heads.push({ sep: m.index, cmd: text.slice(cmdStart, end), body: Math.min(end + 3, text.length), error: m[2] === 'Error' });
    HEAD.lastIndex = end + 2;
  }
  let cursor = 0;
  let current = null;
  for (const next of [...heads, null]) {
    const piece = text.slice(cursor, next ? next.sep : text.length);
    if (!current) {
      if (piece.trim()) out.push({ kind: 'prose', text: piece.trim() });
    } else out.push({ kind: current.error ? 'error' : 'output', cmd: current.cmd, output: piece });
    if (!next) break;
    cursor = next.body;
    current = next;
  }
  return out;
}
