// The shared terminal's screen, kept by a real terminal emulator
// (@xterm/headless, no DOM) fed with every byte the terminal writes: a
// snapshot redraws it for a viewer that attaches, and its text is what the
// agent is shown (docs/protocol.md "The shared terminal").

import { SerializeAddon } from "@xterm/addon-serialize";
import { Terminal } from "@xterm/headless";
import { blank, paint, type Painted } from "./spans";
import { trimEnd } from "./text";

/** Lines of the screen the agent is shown, and their bytes at most. */
export const AGENT_LINES = 60;
export const AGENT_BYTES = 8 * 1024;
/** Lines kept above the screen: none (a snapshot redraws the screen, the agent reads the screen). */
const SCROLLBACK = 0;

/** Resets a viewer's emulator before a snapshot (RIS), so the redraw starts from a blank screen. */
const RESET = "\x1bc";

const encoder = new TextEncoder();

function emulator(cols: number, rows: number): [Terminal, SerializeAddon] {
  const term = new Terminal({ cols, rows, scrollback: SCROLLBACK, allowProposedApi: true });
  const serializer = new SerializeAddon();
  term.loadAddon(serializer);
  return [term, serializer];
}
const decoder = new TextDecoder();

/**
 * The emulator behind a screen; every call into it is guarded (src/emulator.rs
 * does the same for duet serve): on a throw it is rebuilt, showing what could
 * still be read of the old one, and the terminal lives on.
 */
export class Screen {
  private term: Terminal;
  private serializer: SerializeAddon;
  /** Whether the cursor shows (DECTCEM, `CSI ? 25 h/l`): the emulator keeps it but does not say. */
  private cursorVisible = true;

  constructor(cols: number, rows: number) {
    [this.term, this.serializer] = emulator(cols, rows);
    this.watchCursor();
  }

  /** Follows the cursor's visibility as the emulator parses (it goes on with its own handling). */
  private watchCursor(): void {
    const term = this.term;
    const mode = (show: boolean) => (params: (number | number[])[]) => {
      if (params.some((p) => p === 25)) this.cursorVisible = show;
      return false;
    };
    const reset = () => {
      this.cursorVisible = true;
      return false;
    };
    term.parser.registerCsiHandler({ prefix: "?", final: "h" }, mode(true));
    term.parser.registerCsiHandler({ prefix: "?", final: "l" }, mode(false));
    term.parser.registerCsiHandler({ intermediates: "!", final: "p" }, reset);
    term.parser.registerEscHandler({ final: "c" }, reset);
  }

  /** The screen as `screen` frames draw it; blank when it cannot be read. */
  paint(): Painted {
    try {
      return paint(this.term, this.cursorVisible);
    } catch (e) {
      console.error(`the terminal's screen could not be read: ${String(e)}`);
      return blank(this.cols, this.rows);
    }
  }

  get cols(): number {
    return this.term.cols;
  }

  get rows(): number {
    return this.term.rows;
  }

  /**
   * Feeds output bytes; `parsed` runs once the emulator has taken them in,
   * in the order of the writes, so that what follows a snapshot is exactly
   * the output after it.
   */
  write(bytes: Uint8Array, parsed?: () => void): void {
    try {
      this.term.write(bytes, parsed);
    } catch (e) {
      this.rebuild("output", e);
      parsed?.();
    }
  }

  /** Runs `then` once every byte written so far is on the screen. */
  afterWrites(then: () => void): void {
    this.write(new Uint8Array(0), then);
  }

  resize(cols: number, rows: number): void {
    try {
      this.term.resize(cols, rows);
    } catch (e) {
      this.rebuild("a resize", e, cols, rows);
    }
  }

  /** Bytes that redraw the whole screen (and the alternate screen and modes in use) on a fresh emulator. */
  snapshot(): Uint8Array {
    return encoder.encode(RESET + this.serialized());
  }

  private serialized(): string {
    try {
      return this.serializer.serialize({ scrollback: 0 });
    } catch (e) {
      console.error(`the terminal's screen could not be read: ${String(e)}`);
      return "";
    }
  }

  /** A fresh emulator (of `cols`×`rows`) in place of one that threw, showing what the old one still could. */
  private rebuild(during: string, e: unknown, cols = this.cols, rows = this.rows): void {
    console.error(`the terminal's emulator failed on ${during}; its screen was rebuilt: ${String(e)}`);
    const old = this.serialized();
    try {
      this.term.dispose();
    } catch {
      // it is being replaced
    }
    [this.term, this.serializer] = emulator(cols, rows);
    this.cursorVisible = true;
    this.watchCursor();
    try {
      this.term.write(old);
    } catch {
      // a blank screen then
    }
  }

  /**
   * The screen as text (src/server/terminal/screen.rs): its last
   * AGENT_LINES lines, each without trailing blanks, blank lines at the end
   * dropped, at most AGENT_BYTES (the end kept).
   */
  text(): string {
    try {
      return this.readText();
    } catch (e) {
      console.error(`the terminal's screen could not be read: ${String(e)}`);
      return "";
    }
  }

  private readText(): string {
    const buffer = this.term.buffer.active;
    const lines: string[] = [];
    for (let i = buffer.baseY; i < buffer.baseY + this.term.rows; i++) lines.push(trimEnd(buffer.getLine(i)?.translateToString(true) ?? ""));
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    let text = lines.slice(-AGENT_LINES).join("\n");
    const bytes = encoder.encode(text);
    if (bytes.length > AGENT_BYTES) {
      // The end is what matters: the bytes before it are dropped, on a character boundary.
      let start = bytes.length - AGENT_BYTES;
      while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++;
      text = decoder.decode(bytes.subarray(start));
    }
    return text;
  }

  dispose(): void {
    this.term.dispose();
  }
}
