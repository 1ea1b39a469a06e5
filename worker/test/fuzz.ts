// A tiny seeded generator of hostile input for the property tests
// (hostile.test.ts, hostile-parsers.test.ts): the same cases every run for a
// given seed, printed with a failure so that it can be replayed.

export class Gen {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0 || 1;
  }

  /** mulberry32: a whole number in [0, n). */
  int(n: number): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) % n) >>> 0;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  chance(p: number): boolean {
    return this.int(1_000_000) < p * 1_000_000;
  }

  /** Characters that break naive code: controls, NUL, quotes, lone surrogates, emoji, RTL, white space. */
  char(): string {
    return this.pick([
      "a", "Z", "0", "_", "-", ".", "/", "\\", "%", "?", "#", "&", "=", "+", " ", "\t", "\n", "\r", "\0",
      "\u0007", "\u007f", "\u0085", "\u00a0", "\u2028", "\u202e", "\ufeff", "\ufffd", "é", "ß", "中", "😀",
      "\ud800", "\udfff", '"', "'", "`", "$", "(", ")", "{", "}", "[", "]", "<", ">", ":", ";", "*",
    ]);
  }

  /** A string of up to `max` hostile characters, now and then a very long one. */
  string(max = 20): string {
    if (this.chance(0.03)) return this.pick(["x", "é", "😀", " "]).repeat(this.pick([33, 64, 65, 8001, 70_000]));
    let s = "";
    for (let n = this.int(max + 1); n > 0; n--) s += this.char();
    return s;
  }

  /** Any JSON value, nested up to `depth`. */
  json(depth = 3): unknown {
    switch (this.int(depth > 0 ? 9 : 6)) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.pick([0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, 18446744073709551616, 123456789]);
      case 3:
      case 4:
      case 5:
        return this.string();
      case 6:
      case 7:
        return Array.from({ length: this.int(4) }, () => this.json(depth - 1));
      default: {
        const o: Record<string, unknown> = {};
        for (let n = this.int(4); n > 0; n--) o[this.chance(0.5) ? this.string(6) : this.pick(FIELDS)] = this.json(depth - 1);
        return o;
      }
    }
  }

  /** `valid` with some of its fields dropped, retyped or given hostile values, and strange fields added. */
  mutate(valid: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = { ...valid };
    for (const key of Object.keys(out)) {
      const r = this.int(6);
      if (r === 0) delete out[key];
      else if (r === 1) out[key] = this.json(2);
      else if (r === 2 && typeof out[key] === "string") out[key] = this.string();
    }
    if (this.chance(0.3)) out[this.pick(FIELDS)] = this.json(2);
    if (this.chance(0.1)) out["__proto__"] = { polluted: true };
    return out;
  }

  /** A body as bytes: JSON of anything, a mutated object, broken JSON or invalid UTF-8. */
  body(valid: Record<string, unknown>): Uint8Array | string {
    switch (this.int(6)) {
      case 0:
        return JSON.stringify(this.json());
      case 1:
        return JSON.stringify(this.mutate(valid)).slice(0, this.int(40));
      case 2:
        return Uint8Array.from({ length: this.int(40) }, () => this.int(256));
      default:
        return JSON.stringify(this.mutate(valid));
    }
  }

  /** A URL path segment: a percent-encoded hostile string, or raw hostile pieces. */
  segment(): string {
    if (this.chance(0.5)) {
      try {
        return encodeURIComponent(this.string(12));
      } catch {
        return "%ED%A0%80"; // a lone surrogate does not encode: its bytes, which do not decode
      }
    }
    return this.pick(["..", ".", "%2e%2e", "%2F", "%00", "%", "%zz", "%c3", "%ff", "a%2Fb", "~", "a", "A-1", "x".repeat(70), ""]);
  }
}

const FIELDS = ["text", "userId", "clientId", "cmd", "timeoutMs", "cwd", "env", "execId", "turnId", "type", "id", "method", "args"];
