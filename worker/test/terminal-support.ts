// A client of the shared terminal for the tests: a socket attached to it
// that draws its `data` frames with a terminal emulator (src/screen.ts), as
// a client does, so that a test reads the screen a person would see.
import { expect } from "vitest";
import { Screen } from "../src/screen";
import { fromBase64 } from "../src/sandbox/bytes";
import type { Json, Ws } from "./support";

export const encode = (s: string) => btoa(s);
/** How long a screen may take to show something (the machine is shared). */
const SCREEN_WAIT_MS = 30_000;

/** A socket attached to the terminal, drawing its `data` frames. */
export class Viewer {
  readonly screen: Screen;
  /** Every frame the socket got after its snapshot, in order. */
  readonly frames: Json[] = [];
  private pump: Promise<void>;
  private stopped = false;

  constructor(
    readonly ws: Ws,
    readonly termId: string,
    cols: number,
    rows: number,
  ) {
    this.screen = new Screen(cols, rows);
    this.pump = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let f: Json;
      try {
        f = await this.ws.next();
      } catch {
        return;
      }
      this.frames.push(f);
      if (f.type === "duet_term" && f.termId === this.termId) {
        if (f.phase === "data") this.screen.write(fromBase64(f.data));
        else if (f.phase === "resize") this.screen.resize(f.cols, f.rows);
      }
    }
  }

  /** The screen's text once every byte so far is on it. */
  text(): Promise<string> {
    return new Promise((ok) => this.screen.afterWrites(() => ok(this.screen.text())));
  }

  /** Waits until the screen shows `what`. */
  async shows(what: string | RegExp): Promise<string> {
    const deadline = Date.now() + SCREEN_WAIT_MS;
    for (;;) {
      const text = await this.text();
      if (typeof what === "string" ? text.includes(what) : what.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`the screen never showed ${String(what)}; it shows:\n${text}`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  /** Waits for a frame that matches, among those after the snapshot. */
  async frame(what: (f: Json) => boolean): Promise<Json> {
    const deadline = Date.now() + SCREEN_WAIT_MS;
    for (;;) {
      const found = this.frames.find(what);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no such frame; got ${JSON.stringify(this.frames.map((f) => f.type + ":" + (f.phase ?? "")))}`);
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }

  type(text: string): void {
    this.ws.send({ type: "duet_term_input", termId: this.termId, data: encode(text) });
  }

  stop(): void {
    this.stopped = true;
  }
}

/** Opens (or attaches to) the terminal from `s`; returns the answer and the frames up to the snapshot. */
export async function open(s: Ws, id: string, args: Json = {}): Promise<{ answer: Json; before: Json[]; snapshot: Json }> {
  s.send({ type: "rpc", id, method: "term_open", args: [args] });
  const before: Json[] = [];
  let answer: Json;
  for (;;) {
    const f = await s.next();
    if (f.type === "rpc" && f.id === id) {
      answer = f;
      break;
    }
    before.push(f);
  }
  expect(answer.success, JSON.stringify(answer)).toBe(true);
  const snapshot = await s.until((f) => f.type === "duet_term" && f.phase === "data");
  expect(snapshot.snapshot).toBe(true);
  return { answer: answer.result, before, snapshot };
}

/** Attaches `s` and draws from its snapshot on. */
export async function attach(s: Ws, id: string, cols: number, rows: number): Promise<Viewer> {
  const { answer, snapshot } = await open(s, id, { cols, rows });
  const v = new Viewer(s, answer.termId, answer.cols, answer.rows);
  v.screen.write(fromBase64(snapshot.data));
  return v;
}
