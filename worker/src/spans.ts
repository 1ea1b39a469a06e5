// The screen as `screen` frames draw it (docs/protocol.md "The shared
// terminal"; src/server/terminal/spans.rs on duet serve): each row of the
// @xterm/headless buffer as spans of equal attributes, the cursor and the
// input modes. Pure: reads the terminal, never writes to it.

import type { IBufferCell, Terminal } from "@xterm/headless";

/** A colour: a palette index, or true colour as "#rrggbb". */
export type SpanColor = number | string;

export interface Span {
  t: string;
  fg?: SpanColor;
  bg?: SpanColor;
  b?: true;
  d?: true;
  i?: true;
  u?: true;
  r?: true;
}

export interface ScreenCursor {
  x: number;
  y: number;
  visible: boolean;
}

export interface ScreenModes {
  altScreen: boolean;
  appCursor: boolean;
  bracketedPaste: boolean;
}

/** What a screen frame shows, row by row. */
export interface Painted {
  cols: number;
  rows: number;
  lines: Span[][];
  cursor: ScreenCursor;
  modes: ScreenModes;
}

/** Reads the whole screen (`cursorVisible`: the emulator does not say; the caller tracks DECTCEM). */
export function paint(term: Terminal, cursorVisible: boolean): Painted {
  const { cols, rows } = term;
  const buffer = term.buffer.active;
  const lines: Span[][] = [];
  let cell: IBufferCell | undefined;
  for (let y = 0; y < rows; y++) {
    const line = buffer.getLine(buffer.baseY + y);
    const spans: Span[] = [];
    for (let x = 0; line !== undefined && x < cols; x++) {
      cell = line.getCell(x, cell);
      if (cell === undefined) break;
      // The right half of a wide character: its left half covers it.
      if (cell.getWidth() === 0) continue;
      const look = lookOf(cell);
      const text = cell.getChars() || " ";
      const last = spans[spans.length - 1];
      if (last !== undefined && sameLook(last, look)) last.t += text;
      else spans.push({ ...look, t: text });
    }
    trimTrailingBlanks(spans);
    lines.push(spans);
  }
  const cursor = {
    // Past the last column (a wrap pending) it is drawn on the last.
    x: Math.min(buffer.cursorX, cols - 1),
    y: Math.min(buffer.cursorY, rows - 1),
    visible: cursorVisible,
  };
  const modes = {
    altScreen: buffer.type === "alternate",
    appCursor: term.modes.applicationCursorKeysMode,
    bracketedPaste: term.modes.bracketedPasteMode,
  };
  return { cols, rows, lines, cursor, modes };
}

/** A blank screen of `cols`×`rows` (what is shown when the emulator cannot be read). */
export function blank(cols: number, rows: number): Painted {
  return {
    cols,
    rows,
    lines: Array.from({ length: rows }, () => []),
    cursor: { x: 0, y: 0, visible: true },
    modes: { altScreen: false, appCursor: false, bracketedPaste: false },
  };
}

/** A span's attributes, its keys in the frame's order (t, fg, bg, b, d, i, u, r). */
function lookOf(cell: IBufferCell): Span {
  const look: Span = { t: "" };
  const fg = color(cell.isFgDefault(), cell.isFgPalette(), cell.isFgRGB(), cell.getFgColor());
  const bg = color(cell.isBgDefault(), cell.isBgPalette(), cell.isBgRGB(), cell.getBgColor());
  if (fg !== undefined) look.fg = fg;
  if (bg !== undefined) look.bg = bg;
  if (cell.isBold()) look.b = true;
  if (cell.isDim()) look.d = true;
  if (cell.isItalic()) look.i = true;
  if (cell.isUnderline()) look.u = true;
  if (cell.isInverse()) look.r = true;
  return look;
}

function color(isDefault: boolean, isPalette: boolean, isRgb: boolean, value: number): SpanColor | undefined {
  if (isDefault) return undefined;
  if (isPalette) return value;
  if (isRgb) return `#${(value & 0xffffff).toString(16).padStart(6, "0")}`;
  return undefined;
}

function sameLook(a: Span, b: Span): boolean {
  return a.fg === b.fg && a.bg === b.bg && a.b === b.b && a.d === b.d && a.i === b.i && a.u === b.u && a.r === b.r;
}

/** Trailing blanks drawn as the background (no colour behind, no underline, no inverse) are left out. */
function trimTrailingBlanks(spans: Span[]): void {
  for (;;) {
    const last = spans[spans.length - 1];
    if (last === undefined || last.bg !== undefined || last.u || last.r) return;
    last.t = last.t.replace(/ +$/, "");
    if (last.t !== "") return;
    spans.pop();
  }
}
