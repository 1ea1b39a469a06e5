// Bytes and base64 without node:buffer (the worker has no Node types).

const CHUNK = 0x8000;

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The bytes of standard base64 (padding required, no white space), or undefined when it is not that. */
export function fromBase64Strict(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    return fromBase64(text);
  } catch {
    return undefined;
  }
}

const encoder = new TextEncoder();

/** UTF-8 length of `s`. */
export function byteLength(s: string): number {
  return encoder.encode(s).length;
}

/** The longest prefix of `s` of at most `bytes` UTF-8 bytes (whole characters). */
export function cutToBytes(s: string, bytes: number): string {
  let used = 0;
  let end = 0;
  for (const ch of s) {
    const size = byteLength(ch);
    if (used + size > bytes) break;
    used += size;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** The first 16 hex digits of SHA-256 of `s`. */
export async function shortHash(s: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(s)));
  return [...digest.subarray(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `chunks` one after another, as one array. */
export function concatBytes(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
