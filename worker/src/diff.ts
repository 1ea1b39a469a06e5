// `GET /diff` (docs/protocol.md "Archives"): git compares a checkpoint's
// copy (`a/`) with /workspace (`b/`) in the container (src/sandbox/trees.ts);
// this tidies its output as it streams by. `git diff --no-index` names a
// new file `b/P b/P` and a deleted one `a/P a/P` in its `diff --git` line,
// where git's own diff says `a/P b/P`; the `path` filters keep only the
// files they name; the routes' own scratch is left out. Lines are bytes
// (a file's lines need not be UTF-8); only `diff --git` lines are read.

import { isScratch } from "./sandbox/trees";

const HEADER = new TextEncoder().encode("diff --git ");
const utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const encoder = new TextEncoder();

/** Whether `line` starts with `diff --git `; hunk and binary lines never do (they start with ` +-\@` or base85). */
function isHeader(line: Uint8Array): boolean {
  if (line.byteLength < HEADER.byteLength) return false;
  for (let i = 0; i < HEADER.byteLength; i++) if (line[i] !== HEADER[i]) return false;
  return true;
}

/** A path as git quotes it (`"a/x\tb"`, C escapes, octal bytes) back to its text. */
export function unquote(quoted: string): string {
  if (!quoted.startsWith('"') || !quoted.endsWith('"')) return quoted;
  const bytes: number[] = [];
  const inner = quoted.slice(1, -1);
  const simple: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === "\\" && i + 1 < inner.length) {
      const next = inner[i + 1];
      const octal = /^[0-7]{3}/.exec(inner.slice(i + 1));
      if (octal) {
        bytes.push(parseInt(octal[0], 8));
        i += 3;
        continue;
      }
      if (simple[next] !== undefined) {
        bytes.push(simple[next]);
        i += 1;
        continue;
      }
    }
    bytes.push(...encoder.encode(c));
  }
  return utf8.decode(new Uint8Array(bytes));
}

/** The two names of a `diff --git X Y` line (X and Y the same path: renames are off), or undefined. */
export function headerPath(line: string): { path: string; fixed: string } | undefined {
  const rest = line.slice("diff --git ".length);
  if ((rest.length - 1) % 2 !== 0) return undefined;
  const half = (rest.length - 1) / 2;
  const left = rest.slice(0, half);
  const right = rest.slice(half + 1);
  const strip = (name: string) => (name.startsWith('"') ? `"${name.slice(3)}` : name.slice(2));
  const prefixed = (name: string) => /^"?[ab]\//.test(name);
  if (rest[half] !== " " || !prefixed(left) || !prefixed(right) || strip(left) !== strip(right)) return undefined;
  const name = strip(left);
  const side = (letter: string) => (name.startsWith('"') ? `"${letter}/${name.slice(1)}` : `${letter}/${name}`);
  return { path: unquote(name), fixed: `diff --git ${side("a")} ${side("b")}` };
}

/** Whether `path` is one of `filters` or beneath one (no filters: every path). */
function wanted(path: string, filters: string[]): boolean {
  return filters.length === 0 || filters.some((f) => path === f || path.startsWith(`${f}/`));
}

/** `a` then `b`, as one array. */
function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b.slice();
  const both = new Uint8Array(a.byteLength + b.byteLength);
  both.set(a);
  both.set(b, a.byteLength);
  return both;
}

/**
 * git's output, tidied as it goes by: the headers as git's own diff writes
 * them, only the files asked for. Only the start of a line (and a whole
 * `diff --git` line) is held; the rest of a long line passes at once.
 */
export function tidyDiff(filters: string[]): TransformStream<Uint8Array, Uint8Array> {
  let start: Uint8Array = new Uint8Array(0);
  /** Inside a line known not to be a header. */
  let passing = false;
  let keep = false;
  const whole = (bytes: Uint8Array, out: TransformStreamDefaultController<Uint8Array>) => {
    if (isHeader(bytes)) {
      const text = utf8.decode(bytes.subarray(0, bytes.byteLength - (bytes[bytes.byteLength - 1] === 0x0a ? 1 : 0)));
      const header = headerPath(text);
      keep = header === undefined || (!isScratch(header.path) && wanted(header.path, filters));
      if (keep) out.enqueue(header ? encoder.encode(`${header.fixed}\n`) : bytes);
    } else if (keep) out.enqueue(bytes);
  };
  return new TransformStream({
    transform(chunk, out) {
      let at = 0;
      while (at < chunk.byteLength) {
        const nl = chunk.indexOf(0x0a, at);
        const end = nl < 0 ? chunk.byteLength : nl + 1;
        if (passing) {
          if (keep) out.enqueue(chunk.slice(at, end));
        } else {
          start = joined(start, chunk.subarray(at, end));
          if (nl >= 0) {
            whole(start, out);
            start = new Uint8Array(0);
          } else if (start.byteLength >= HEADER.byteLength && !isHeader(start)) {
            if (keep) out.enqueue(start);
            start = new Uint8Array(0);
            passing = true;
          }
        }
        if (nl >= 0) passing = false;
        at = end;
      }
    },
    flush(out) {
      if (start.byteLength > 0) whole(start, out);
    },
  });
}
