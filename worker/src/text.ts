// The names and text rules of docs/protocol.md: room ids, people's names,
// white space as Rust trims it, lengths in characters, capped texts, ids
// and timestamps as `duet serve` writes them (src/protocol/).

/** Whether `id` is a valid room id: 1–63 of `A-Za-z0-9_-`, first and last alphanumeric. */
export function validRoomId(id: string): boolean {
  return /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$/.test(id);
}

/** The message of a bad room id. */
export const ROOM_RULE = "must be 1-63 characters of A-Z a-z 0-9 _ -, the first and last a letter or digit";

/** The sandbox name of a room. */
export function sandboxName(room: string): string {
  return `sandbox-${room}`;
}

/** Characters (Unicode scalar values) of `s`. */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Rust's `char::is_control`: the Cc category. */
export function isControl(ch: string): boolean {
  const c = ch.codePointAt(0) ?? 0;
  return c <= 0x1f || (c >= 0x7f && c <= 0x9f);
}

/**
 * Whether a name may not hold `ch`: a control character, or one that is
 * invisible or moves other text (a line or paragraph separator, a
 * zero-width space, a bidirectional override that would show another's
 * name). The joiners (U+200C, U+200D) stay. Twin of src/protocol/names.rs `unprintable`.
 */
export function unprintable(ch: string): boolean {
  const c = ch.codePointAt(0) ?? 0;
  return (
    isControl(ch) ||
    c === 0xad ||
    c === 0x61c ||
    c === 0x180e ||
    c === 0x200b ||
    (c >= 0x200e && c <= 0x200f) ||
    (c >= 0x2028 && c <= 0x202e) ||
    (c >= 0x2060 && c <= 0x2064) ||
    (c >= 0x2066 && c <= 0x206f) ||
    c === 0xfeff ||
    (c >= 0xfff9 && c <= 0xfffb)
  );
}

/** Why a person's name is not acceptable, if it is not: 1–32 printable characters. */
export function nameProblem(name: string): string | undefined {
  const count = charCount(name);
  if (count === 0) return "must not be empty";
  if (count > 32) return "must be at most 32 characters";
  for (const ch of name) if (unprintable(ch)) return "must be printable characters";
  return undefined;
}

/** Rust's White_Space (what `str::trim` removes), which differs from JavaScript's. */
const WHITE_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
  0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

function isWhite(s: string, i: number): boolean {
  return WHITE_SPACE.has(s.charCodeAt(i));
}

/** Rust's `str::trim_end`. */
export function trimEnd(s: string): string {
  let end = s.length;
  while (end > 0 && isWhite(s, end - 1)) end--;
  return s.slice(0, end);
}

/** Rust's `str::trim_start`. */
export function trimStart(s: string): string {
  let start = 0;
  while (start < s.length && isWhite(s, start)) start++;
  return s.slice(start);
}

/** Rust's `str::trim`. */
export function trim(s: string): string {
  return trimStart(trimEnd(s));
}

/** The first `n` characters of `s` and whether there were more. */
export function firstChars(s: string, n: number): [string, boolean] {
  let i = 0;
  let count = 0;
  while (i < s.length) {
    if (count === n) return [s.slice(0, i), true];
    const c = s.codePointAt(i) ?? 0;
    i += c > 0xffff ? 2 : 1;
    count++;
  }
  return [s, false];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `text` cut to at most `cap` UTF-8 bytes on a character boundary, and whether it was cut. */
export function capText(text: string, cap: number): [string, boolean] {
  // Cheap answer for text that cannot exceed the cap (at most 3 bytes per UTF-16 unit).
  if (text.length * 3 <= cap) return [text, false];
  const bytes = encoder.encode(text);
  if (bytes.length <= cap) return [text, false];
  let end = cap;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return [decoder.decode(bytes.subarray(0, end)), true];
}

/** ISO 8601 (UTC, milliseconds) for a `ts`. */
export function isoTimestamp(ts: number): string {
  return new Date(ts).toISOString();
}

/** `n` as a decimal of at least `width` digits. */
export function padded(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** A message id: the room's message number, 12 digits. */
export function messageId(n: number): string {
  return padded(n, 12);
}

/** A command id: `x` and the room's command number, 11 digits. */
export function execId(n: number): string {
  return `x${padded(n, 11)}`;
}

/** 16 random hex digits. */
export function randomHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
