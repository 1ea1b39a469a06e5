// The room's shared terminal (docs/protocol.md "The shared terminal"): at
// most one bash on a pseudo-terminal in the sandbox (src/sandbox/types.ts
// `openTerminal`), its screen (src/screen.ts), the sockets attached to it
// and their sizes (the "smallest" rule), its frames, and its end: by its
// own exit, term_close, a cleanup, or an hour unattached and silent.
//
// Attachments live in memory: a Durable Object that holds a client
// WebSocket (the PTY's) does not hibernate, so they last as long as the
// terminal does.

import { positiveVar } from "./env";
import { ApiError, isWhole, ok, type JsonObject, type Reply } from "./http";
import { termDataFrame, termExitFrame, termOpenFrame, termResizeFrame, type TerminalState } from "./protocol";
import { randomHex } from "./text";
import { fromBase64Strict } from "./sandbox/bytes";
import type { Pty, RoomSandbox, TermSize } from "./sandbox/types";
import { Screen } from "./screen";
import { ScreenFeed } from "./screenfeed";
import { StaleRegion } from "./staleregion";

/** A terminal nobody gave a size for. */
export const DEFAULT_SIZE: TermSize = { cols: 80, rows: 24 };
/** The smallest terminal: a smaller window counts as this (a hidden or sliver pane must not squeeze everyone's programs). */
export const MIN_COLS = 20;
export const MIN_ROWS = 5;
export const MAX_COLS = 500;
export const MAX_ROWS = 200;
/** Decoded bytes one `duet_term_input` may carry. */
export const MAX_INPUT = 64 * 1024;
/** DUET_TERMINAL_IDLE_SECS when unset. */
const DEFAULT_IDLE_SECS = 3600;

/** The "smallest" rule: the narrowest and the shortest of the sizes given; undefined when none was. */
export function smallest(sizes: Iterable<TermSize | undefined>): TermSize | undefined {
  let out: TermSize | undefined;
  for (const s of sizes) {
    if (s === undefined) continue;
    out = out === undefined ? { ...s } : { cols: Math.min(out.cols, s.cols), rows: Math.min(out.rows, s.rows) };
  }
  return out;
}

/** What is wrong with a request's `cols` and `rows` as a size, by field: each must be a whole number, any (src/protocol/terminal.rs TermSize::problems). */
export function sizeProblems(size: JsonObject): [string, string][] {
  const problems: [string, string][] = [];
  if (!isWhole(size, "cols")) problems.push(["cols", "must be a whole number"]);
  if (!isWhole(size, "rows")) problems.push(["rows", "must be a whole number"]);
  return problems;
}

/** A request's size, within the bounds (src/protocol/terminal.rs TermSize::clamped); call after sizeProblems found none. */
export function clampSize(size: JsonObject): TermSize {
  const bound = (v: unknown, min: number, max: number) => Math.min(max, Math.max(min, Number(v) || 0));
  return { cols: bound(size.cols, MIN_COLS, MAX_COLS), rows: bound(size.rows, MIN_ROWS, MAX_ROWS) };
}

/** How the terminal reaches the room and its sockets. */
export interface TerminalHost {
  sandbox(): RoomSandbox;
  /** A frame to every socket. */
  all(text: string): void;
  /** A frame to one socket, by connection id. */
  send(connection: string, text: string): void;
  /** The room state's `terminal` changed. */
  changed(state: TerminalState | null): void;
}

/** One running terminal. */
interface Running {
  termId: string;
  pty?: Pty;
  screen: Screen;
  size: TermSize;
  /** The attached sockets and the window each gave (undefined: none). */
  viewers: Map<string, TermSize | undefined>;
  /** The attached sockets that got their snapshot: they get the output from there on. */
  receiving: Set<string>;
  /** The attached sockets that get `screen` frames instead (src/screenfeed.ts). */
  screens: ScreenFeed;
  /** Scroll-region resets a program still writes for an old height. */
  stale: StaleRegion;
  idleTimer?: ReturnType<typeof setTimeout>;
  /** It ended (or never started). */
  over: boolean;
}

export class SharedTerminal {
  private current?: Running;
  private opening?: Promise<Running>;
  private readonly idleMs: number;

  constructor(
    private readonly host: TerminalHost,
    idleSecs: string | undefined,
  ) {
    this.idleMs = positiveVar(idleSecs, DEFAULT_IDLE_SECS) * 1000;
  }

  /** The room state's `terminal`. */
  state(): TerminalState | null {
    const t = this.current;
    return t ? { termId: t.termId, cols: t.size.cols, rows: t.size.rows } : null;
  }

  /** The screen as text for the agent, while a terminal runs. */
  screen(): { cols: number; rows: number; text: string } | undefined {
    const t = this.current;
    return t ? { cols: t.size.cols, rows: t.size.rows, text: t.screen.text() } : undefined;
  }

  /** Whether socket `connection` is attached to terminal `termId`. */
  attached(connection: string, termId: unknown): boolean {
    return this.current !== undefined && this.current.termId === termId && this.current.viewers.has(connection);
  }

  /**
   * rpc `term_open` by socket `connection` (named `by`) with its window
   * `size`: opens the terminal if none runs (`open` to everyone first),
   * attaches the socket, and answers; `after` sends its snapshot (a `full`
   * screen frame with `screen`), to be called right after the answer went
   * out. Throws SandboxStarting.
   */
  async open(connection: string, by: string, size: TermSize | undefined, screen = false): Promise<{ reply: Reply; after: () => void }> {
    const t = this.current ?? (await (this.opening ??= this.start(by, size).finally(() => (this.opening = undefined))));
    const before = t.viewers.get(connection);
    t.viewers.set(connection, size ?? before);
    this.stopIdle(t);
    this.fit(t);
    // duet serve's field order (its keys sorted).
    const reply = ok({ cols: t.size.cols, rows: t.size.rows, termId: t.termId });
    return { reply, after: () => this.snapshot(t, connection, screen) };
  }

  /** rpc `term_detach`: this socket stops receiving; the terminal runs on. */
  detach(connection: string, termId: string): Reply {
    const t = this.current;
    if (!t || !this.attached(connection, termId)) return notAttached();
    this.leave(t, connection);
    return ok({ detached: true });
  }

  /** rpc `term_close`: the terminal ends for everyone. */
  async close(termId: string): Promise<Reply> {
    const t = this.current;
    if (!t || t.termId !== termId) {
      return new ApiError(404, "no such terminal", { termId: ["no terminal with this id runs in the room"] }).reply();
    }
    this.finish(t, null);
    await t.pty?.close();
    return ok({ closed: true });
  }

  /** The room is cleaned up: the terminal ends (its `exit` goes out before `duet_cleanup`). */
  async end(): Promise<void> {
    const t = this.current ?? (await this.opening?.catch(() => undefined));
    if (!t || this.current !== t) return;
    this.finish(t, null);
    try {
      await t.pty?.close();
    } catch (e) {
      console.error(`ending the terminal failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Socket `connection` became a viewer: it watches on, and its size no longer counts. */
  ignoreSize(connection: string): void {
    const t = this.current;
    if (!t?.viewers.has(connection)) return;
    t.viewers.set(connection, undefined);
    this.fit(t);
  }

  /** A socket left: it no longer counts. */
  left(connection: string): void {
    const t = this.current;
    if (t?.viewers.has(connection)) this.leave(t, connection);
  }

  /** `duet_term_input` from `connection`: the error to answer, or undefined when the bytes were written. */
  input(connection: string, termId: unknown, data: unknown): string | undefined {
    const kind = "duet_term_input";
    if (typeof termId !== "string") return `${kind}: needs a "termId"`;
    if (!this.attached(connection, termId)) return notAttachedFrame(kind, termId);
    if (typeof data !== "string") return `${kind}: needs "data" (base64)`;
    const bytes = fromBase64Strict(data);
    if (bytes === undefined) return `${kind}: data must be base64`;
    if (bytes.length > MAX_INPUT) return `${kind}: at most ${MAX_INPUT} bytes per frame`;
    this.current?.pty?.write(bytes);
    return undefined;
  }

  /** `duet_term_resize` from `connection`: the error to answer, or undefined. */
  resize(connection: string, termId: unknown, size: JsonObject): string | undefined {
    const kind = "duet_term_resize";
    if (typeof termId !== "string") return `${kind}: needs a "termId"`;
    const t = this.current;
    if (!t || !this.attached(connection, termId)) return notAttachedFrame(kind, termId);
    const [problem] = sizeProblems(size);
    if (problem) return `${kind}: ${problem[0]} ${problem[1]}`;
    t.viewers.set(connection, clampSize(size));
    this.fit(t);
    return undefined;
  }

  private async start(by: string, size: TermSize | undefined): Promise<Running> {
    const termId = `t${randomHex()}`;
    const initial = size ?? DEFAULT_SIZE;
    const screen = new Screen(initial.cols, initial.rows);
    const t: Running = {
      termId,
      screen,
      size: { ...initial },
      viewers: new Map(),
      receiving: new Set(),
      screens: new ScreenFeed(termId, screen, (c, text) => this.host.send(c, text)),
      stale: new StaleRegion(),
      over: false,
    };
    try {
      // Output may come before it is ready (the PTY's buffered output): it goes onto the screen.
      t.pty = await this.host.sandbox().openTerminal(termId, initial, {
        onData: (bytes) => this.output(t, bytes),
        onExit: (code, reason) => this.finish(t, code, reason),
      });
    } catch (e) {
      t.over = true;
      t.screen.dispose();
      throw e;
    }
    this.current = t;
    this.host.all(termOpenFrame(termId, by, t.size.cols, t.size.rows));
    this.host.changed(this.state());
    this.armIdle(t);
    return t;
  }

  /** Output: onto the screen, then to the sockets that receive, in order. */
  private output(t: Running, written: Uint8Array): void {
    if (t.over) return;
    const bytes = t.stale.fix(written);
    if (t.viewers.size === 0) this.armIdle(t);
    t.screen.write(bytes, () => {
      t.screens.changed();
      if (t.receiving.size === 0) return;
      const frame = termDataFrame(t.termId, bytes, false);
      for (const c of t.receiving) this.host.send(c, frame);
    });
  }

  /** Once the screen holds every byte so far: the snapshot (or `full` screen frame), and the output (or screen frames) from there on. */
  private snapshot(t: Running, connection: string, screen: boolean): void {
    t.screen.afterWrites(() => {
      if (this.current !== t || !t.viewers.has(connection)) return;
      t.receiving.delete(connection);
      t.screens.leave(connection);
      if (screen) {
        t.screens.subscribe(connection);
        return;
      }
      this.host.send(connection, termDataFrame(t.termId, t.screen.snapshot(), true));
      t.receiving.add(connection);
    });
  }

  private leave(t: Running, connection: string): void {
    t.viewers.delete(connection);
    t.receiving.delete(connection);
    t.screens.leave(connection);
    this.fit(t);
    if (t.viewers.size === 0) this.armIdle(t);
  }

  /** Applies the smallest rule; a new size goes to the pseudo-terminal, the screen and the viewers. */
  private fit(t: Running): void {
    const size = smallest(t.viewers.values());
    if (!size || (size.cols === t.size.cols && size.rows === t.size.rows)) return;
    t.stale.resized(t.size.rows, size.rows);
    t.size = size;
    t.pty?.resize(size);
    t.screen.resize(size.cols, size.rows);
    const frame = termResizeFrame(t.termId, size.cols, size.rows);
    for (const c of t.receiving) this.host.send(c, frame);
    t.screens.resized(frame);
    this.host.changed(this.state());
  }

  /** The terminal ended: `exit` to everyone (why, when it failed), every socket detached. */
  private finish(t: Running, exitCode: number | null, reason?: string): void {
    if (t.over || this.current !== t) return;
    t.over = true;
    this.current = undefined;
    this.stopIdle(t);
    t.viewers.clear();
    t.receiving.clear();
    t.screens.end();
    this.host.all(termExitFrame(t.termId, exitCode, reason));
    this.host.changed(null);
  }

  /** Unattached: it ends after the idle time without output (restarted by each output). */
  private armIdle(t: Running): void {
    this.stopIdle(t);
    t.idleTimer = setTimeout(() => {
      if (this.current !== t || t.viewers.size > 0) return;
      this.finish(t, null);
      void t.pty?.close().catch((e) => console.error(`closing an idle terminal failed: ${String(e)}`));
    }, this.idleMs);
  }

  private stopIdle(t: Running): void {
    if (t.idleTimer !== undefined) clearTimeout(t.idleTimer);
    t.idleTimer = undefined;
  }
}

function notAttached(): Reply {
  return new ApiError(404, "not attached to that terminal", {
    termId: ["this socket is not attached to a terminal with this id"],
  }).reply();
}

/** The `duet_error` of a terminal frame from a socket that is not attached to `termId`. */
function notAttachedFrame(kind: string, termId: string): string {
  return `${kind}: this socket is not attached to terminal ${JSON.stringify(termId)} (term_open first)`;
}
