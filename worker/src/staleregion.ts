// A program can still write for the terminal's old height after a resize
// made it taller: it draws until it reads its SIGWINCH. Its reset of the
// scroll region then names the old height (`ESC [ 1 ; old r`), which at the
// new height is a region of the top rows only, and the full redraw it sends
// next scrolls inside it, garbled (vim under a window that comes and goes).
// Until the program clears the screen for that redraw, and only for a
// moment after the resize, such a reset means the whole screen, as it did
// when it was written: it is rewritten as one (`ESC [ r`) in the bytes
// everyone is sent. As duet serve's src/server/terminal/stale.rs.

import { concatBytes } from "./sandbox/bytes";

const encoder = new TextEncoder();
/** Clearing the whole screen: the program's redraw for the new size. */
const CLEAR = encoder.encode("\x1b[2J");
/** A scroll region of the whole screen, whatever its height. */
const FULL = encoder.encode("\x1b[r");
/** How long after a resize output can still be drawn for the old size; a region of the old height set later is meant as one. */
export const STALE_FOR_MS = 1_000;

export class StaleRegion {
  /** The old height while stale output may still come, and until when it may. */
  private oldRows?: number;
  private until = 0;

  /** The terminal's height changed from `from` rows to `to`. */
  resized(from: number, to: number, now = Date.now()): void {
    this.oldRows = to > from ? from : undefined;
    this.until = now + STALE_FOR_MS;
  }

  /** `bytes` (read at `now`), with the resets of the old height before the next clear made whole-screen ones. */
  fix(bytes: Uint8Array, now = Date.now()): Uint8Array {
    if (this.oldRows !== undefined && now > this.until) this.oldRows = undefined;
    if (this.oldRows === undefined) return bytes;
    const stale = encoder.encode(`\x1b[1;${this.oldRows}r`);
    const clear = find(bytes, CLEAR, 0);
    if (clear >= 0) this.oldRows = undefined;
    const end = clear >= 0 ? clear : bytes.length;
    const parts: Uint8Array[] = [];
    let from = 0;
    for (let at = find(bytes, stale, 0); at >= 0 && at + stale.length <= end; at = find(bytes, stale, from)) {
      parts.push(bytes.subarray(from, at), FULL);
      from = at + stale.length;
    }
    if (parts.length === 0) return bytes;
    parts.push(bytes.subarray(from));
    return concatBytes(parts);
  }
}

/** Where `needle` starts in `haystack` at or after `from`; -1 when nowhere. */
function find(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
