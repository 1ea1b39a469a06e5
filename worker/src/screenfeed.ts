// The terminal's `screen` frames (docs/protocol.md "The shared terminal";
// src/server/terminal/screens.rs on duet serve): built from the screen at
// most once a tick for every socket attached with `screen: true`,
// serialized once and sent to each; a delta holds the lines changed since
// the previous frame, a `full` one every line.

import type { Screen } from "./screen";
import type { Painted } from "./spans";

/** The shortest time between two frames: at most 20 a second. */
export const TICK_MS = 50;

/** What the sockets were last sent: the size, each line's JSON, the cursor and modes' JSON. */
interface Sent {
  cols: number;
  rows: number;
  lines: string[];
  rest: string;
}

export class ScreenFeed {
  /** The sockets attached for `screen` frames. */
  readonly viewers = new Set<string>();
  private last?: Sent;
  private timer?: ReturnType<typeof setTimeout>;
  private lastTick = 0;

  constructor(
    private readonly termId: string,
    private readonly screen: Screen,
    private readonly send: (connection: string, text: string) => void,
  ) {}

  /** The screen changed: a frame goes out at the next tick. */
  changed(): void {
    if (this.viewers.size === 0) {
      this.last = undefined;
      return;
    }
    if (this.timer !== undefined) return;
    const wait = Math.max(0, this.lastTick + TICK_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
    }, wait);
  }

  /** Sends the lines that changed since the last frame (nothing when nothing did). */
  tick(): void {
    this.stopTimer();
    if (this.viewers.size === 0) {
      this.last = undefined;
      return;
    }
    const now = sent(this.screen.paint());
    const prev = this.last;
    let frame: string;
    if (prev !== undefined && prev.cols === now.cols && prev.rows === now.rows) {
      const changed = now.lines.flatMap((line, y) => (line === prev.lines[y] ? [] : [lineJson(y, line)]));
      if (changed.length === 0 && now.rest === prev.rest) return;
      frame = this.frame(now, false, changed);
    } else {
      frame = this.frame(now, true, now.lines.map((line, y) => lineJson(y, line)));
    }
    this.last = now;
    this.lastTick = Date.now();
    for (const c of this.viewers) this.send(c, frame);
  }

  /** A new socket: what changed before goes to the others first, then its `full` frame. */
  subscribe(connection: string): void {
    this.viewers.delete(connection);
    this.tick();
    const now = sent(this.screen.paint());
    this.last = now;
    this.send(connection, this.frame(now, true, now.lines.map((line, y) => lineJson(y, line))));
    this.viewers.add(connection);
  }

  /** The size changed: its `resize` frame now, then (once the screen holds every byte so far) a `full` frame. */
  resized(resize: string): void {
    if (this.viewers.size === 0) return;
    for (const c of this.viewers) this.send(c, resize);
    this.last = undefined;
    this.screen.afterWrites(() => this.tick());
  }

  leave(connection: string): void {
    this.viewers.delete(connection);
  }

  /** The terminal ended: nothing more goes out. */
  end(): void {
    this.stopTimer();
    this.viewers.clear();
    this.last = undefined;
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** duet serve's frame, field for field: type, phase, termId, cols, rows, full?, lines, cursor, modes. */
  private frame(now: Sent, full: boolean, lines: string[]): string {
    const head = JSON.stringify({ type: "duet_term", phase: "screen", termId: this.termId, cols: now.cols, rows: now.rows, ...(full && { full: true }) });
    return `${head.slice(0, -1)},"lines":[${lines.join(",")}],${now.rest}}`;
  }
}

function sent(painted: Painted): Sent {
  const rest = JSON.stringify({ cursor: painted.cursor, modes: painted.modes }).slice(1, -1);
  return { cols: painted.cols, rows: painted.rows, lines: painted.lines.map((spans) => JSON.stringify(spans)), rest };
}

function lineJson(y: number, spans: string): string {
  return `{"y":${y},"spans":${spans}}`;
}
