// `screen` frames' pure parts, in workerd: the xterm buffer read as spans
// (colours, attributes, wide characters, trailing blanks, cursor, modes,
// hostile bytes as plain text) and the feed's deltas (src/spans.ts,
// src/screenfeed.ts; src/server/terminal/spans.rs on duet serve).
import { describe, expect, it } from "vitest";
import { Screen } from "../src/screen";
import { ScreenFeed } from "../src/screenfeed";
import type { Span } from "../src/spans";

const bytes = (s: string) => new TextEncoder().encode(s);
const written = (screen: Screen) => new Promise<void>((ok) => screen.afterWrites(ok));
const text = (spans: Span[]) => spans.map((s) => s.t).join("");

async function painted(cols: number, rows: number, out: string | Uint8Array) {
  const screen = new Screen(cols, rows);
  screen.write(typeof out === "string" ? bytes(out) : out);
  await written(screen);
  return screen.paint();
}

describe("the screen as spans", () => {
  it("makes one span of equal attributes and leaves trailing blanks out", async () => {
    const p = await painted(30, 5, "plain \x1b[1;31mbold red\x1b[0m tail   ");
    expect(p.lines[0]).toEqual([{ t: "plain " }, { t: "bold red", fg: 1, b: true }, { t: " tail" }]);
    expect(p.lines[1]).toEqual([]);
    expect(p.cursor).toEqual({ x: 22, y: 0, visible: true });
    expect([p.cols, p.rows]).toEqual([30, 5]);
  });

  it("gives palette and true colours and every attribute, in duet serve's key order", async () => {
    const p = await painted(40, 5, "\x1b[38;5;208;48;5;17ma\x1b[0m\x1b[38;2;1;2;255mb\x1b[0m\x1b[2;3;4;7mc\x1b[0m\x1b[44m  \x1b[0m");
    expect(JSON.stringify(p.lines[0])).toBe(
      '[{"t":"a","fg":208,"bg":17},{"t":"b","fg":"#0102ff"},{"t":"c","d":true,"i":true,"u":true,"r":true},{"t":"  ","bg":4}]',
    );
  });

  it("draws a wide character as one character covering two columns", async () => {
    const p = await painted(20, 5, "a界b");
    expect(text(p.lines[0])).toBe("a界b");
    expect(p.cursor.x).toBe(4);
  });

  it("says where the cursor is, whether it shows, and the modes", async () => {
    let p = await painted(20, 5, "\x1b[?25l\x1b[3;7H\x1b[?1h\x1b[?2004h");
    expect(p.cursor).toEqual({ x: 6, y: 2, visible: false });
    expect(p.modes).toEqual({ altScreen: false, appCursor: true, bracketedPaste: true });
    p = await painted(20, 5, "\x1b[?25l\x1b[?25h");
    expect(p.cursor.visible).toBe(true);
    p = await painted(20, 5, "\x1b[?25l\x1bc");
    expect(p.cursor.visible).toBe(true);
    p = await painted(20, 5, "main\x1b[?1049halt");
    expect(p.modes.altScreen).toBe(true);
    expect(text(p.lines[0]).trim()).toBe("alt");
  });

  it("shows hostile bytes as plain text", async () => {
    const out = new Uint8Array([
      ...bytes("<script>alert(1)</script>\x1b]0;<img src=x>\x07\x1b]8;;javascript:x\x1b\\ln"),
      0xff,
      0xfe,
      0x00,
      ...bytes("\x1b[999;999H"),
    ]);
    const p = await painted(60, 5, out);
    const row = text(p.lines[0]);
    expect(row.startsWith("<script>alert(1)</script>ln")).toBe(true);
    expect(row).not.toContain("img");
    expect(row).not.toContain("javascript");
    expect(/[\u0000-\u001f\u007f]/.test(row)).toBe(false);
    expect([p.cursor.x, p.cursor.y]).toEqual([59, 4]);
  });
});

describe("the screen feed", () => {
  it("sends a full frame to a new socket, then the changed lines, nothing when nothing changed", async () => {
    const screen = new Screen(20, 5);
    screen.write(bytes("one\r\ntwo\r\n"));
    await written(screen);
    const sent: [string, string][] = [];
    const feed = new ScreenFeed("t1", screen, (c, t) => sent.push([c, t]));
    feed.subscribe("a");
    const full = JSON.parse(sent[0][1]);
    expect(Object.keys(full)).toEqual(["type", "phase", "termId", "cols", "rows", "full", "lines", "cursor", "modes"]);
    expect(full.lines).toHaveLength(5);
    expect(full.lines[1]).toEqual({ y: 1, spans: [{ t: "two" }] });
    feed.tick();
    expect(sent).toHaveLength(1);
    screen.write(bytes("three"));
    await written(screen);
    feed.tick();
    const delta = JSON.parse(sent[1][1]);
    expect(delta.full).toBeUndefined();
    expect(delta.lines).toEqual([{ y: 2, spans: [{ t: "three" }] }]);
    expect(delta.cursor).toEqual({ x: 5, y: 2, visible: true });
    // Another socket: the first gets nothing new, the second a full frame.
    feed.subscribe("b");
    expect(sent.slice(2).map(([c]) => c)).toEqual(["b"]);
    // A frame is built once for every socket.
    screen.write(bytes("\x1b[H"));
    await written(screen);
    feed.tick();
    expect(sent.slice(3).map(([c]) => c).sort()).toEqual(["a", "b"]);
    expect(sent[3][1]).toBe(sent[4][1]);
    expect(JSON.parse(sent[3][1]).lines).toEqual([]);
    feed.end();
  });
});
