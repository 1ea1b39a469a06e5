// Tar archives for tests, byte by byte: ustar headers, GNU long names past
// 100 bytes, any member type, names that need not be UTF-8.

import { concatBytes } from "../src/sandbox/bytes";

const enc = new TextEncoder();

export interface Member {
  name: string;
  type?: string;
  data?: Uint8Array | string;
  link?: string;
  /** Raw name bytes (for names that are not UTF-8). */
  rawName?: Uint8Array;
}


function octal(n: number, len: number): string {
  return n.toString(8).padStart(len - 1, "0") + "\0";
}

/** One ustar header block. */
function header(name: Uint8Array, type: string, size: number, link = ""): Uint8Array {
  const h = new Uint8Array(512);
  h.set(name.subarray(0, 100), 0);
  h.set(enc.encode(octal(0o644, 8)), 100);
  h.set(enc.encode(octal(0, 8)), 108);
  h.set(enc.encode(octal(0, 8)), 116);
  h.set(enc.encode(octal(size, 12)), 124);
  h.set(enc.encode(octal(1_700_000_000, 12)), 136);
  h[156] = type.charCodeAt(0);
  h.set(enc.encode(link).subarray(0, 100), 157);
  h.set(enc.encode("ustar\x0000"), 257);
  h.fill(0x20, 148, 156);
  const sum = h.reduce((a, b) => a + b, 0);
  h.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return h;
}

function padded(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(data.byteLength / 512) * 512);
  out.set(data);
  return out;
}

/** A tar of `members` (names over 100 bytes as GNU long names), with its two zero blocks. */
export function tarOf(members: Member[]): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const m of members) {
    const name = m.rawName ?? enc.encode(m.name);
    if (name.byteLength > 100) {
      blocks.push(header(enc.encode("././@LongLink"), "L", name.byteLength + 1), padded(new Uint8Array([...name, 0])));
    }
    const data = typeof m.data === "string" ? enc.encode(m.data) : (m.data ?? new Uint8Array(0));
    blocks.push(header(name, m.type ?? "0", data.byteLength, m.link), padded(data));
  }
  blocks.push(new Uint8Array(1024));
  return concatBytes(blocks);
}

