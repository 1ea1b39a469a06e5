// The shared terminal's pure parts, in workerd: the emulator (@xterm/headless
// must run without a DOM), its snapshot and text, the "smallest" size rule
// and the frames' exact bytes.
import { describe, expect, it } from "vitest";
import { AGENT_BYTES, AGENT_LINES, Screen } from "../src/screen";
import { clampSize, sizeProblems, smallest } from "../src/terminal";
import { readJson, type JsonObject } from "../src/http";
import { conversation } from "../src/prompt";
import { STALE_FOR_MS, StaleRegion } from "../src/staleregion";
import { termDataFrame, termExitFrame, termOpenFrame, termResizeFrame, typingFrame } from "../src/protocol";

const bytes = (s: string) => new TextEncoder().encode(s);
const written = (screen: Screen) => new Promise<void>((ok) => screen.afterWrites(ok));

describe("the terminal's screen", () => {
  it("keeps what the program drew, and a snapshot redraws it on a fresh emulator", async () => {
    const screen = new Screen(40, 10);
    screen.write(bytes("$ echo hi\r\nhi\r\n\x1b[31mred\x1b[0m $ half-typ"));
    await written(screen);
    expect(screen.text()).toBe("$ echo hi\nhi\nred $ half-typ");
    const viewer = new Screen(40, 10);
    viewer.write(bytes("garbage that the redraw must clear\r\n"));
    viewer.write(screen.snapshot());
    await written(viewer);
    expect(viewer.text()).toBe(screen.text());
    expect(new TextDecoder().decode(screen.snapshot())).toContain("\x1b[31m");
  });

  it("redraws the alternate screen a full-screen program is on", async () => {
    const screen = new Screen(20, 5);
    screen.write(bytes("shell line\r\n\x1b[?1049h\x1b[H\x1b[2Jtop-like"));
    await written(screen);
    expect(screen.text()).toBe("top-like");
    const viewer = new Screen(20, 5);
    viewer.write(screen.snapshot());
    await written(viewer);
    expect(viewer.text()).toBe("top-like");
  });

  it("shows the agent at most the last 60 lines and 8 KiB", async () => {
    const screen = new Screen(200, 100);
    for (let i = 1; i <= 150; i++) screen.write(bytes(`line ${i}   \r\n`));
    await written(screen);
    const lines = screen.text().split("\n");
    expect(lines.length).toBe(AGENT_LINES);
    expect(lines[0]).toBe("line 91");
    expect(lines[lines.length - 1]).toBe("line 150");
    const wide = new Screen(200, 50);
    for (let i = 0; i < 60; i++) wide.write(bytes(`${"é".repeat(199)}\r\n`));
    await written(wide);
    const text = wide.text();
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(AGENT_BYTES);
    expect(text.endsWith("é".repeat(199))).toBe(true);
    expect(text.includes("\uFFFD")).toBe(false);
  });

  it("follows a resize", () => {
    const screen = new Screen(80, 24);
    screen.resize(100, 30);
    expect([screen.cols, screen.rows]).toEqual([100, 30]);
  });
});

describe("sizes a client gives", () => {
  it("are whole numbers, clamped to 20x5..500x200 (docs/protocol.md)", () => {
    expect(sizeProblems({ cols: 0, rows: -3 })).toEqual([]);
    expect(sizeProblems({ cols: "80", rows: 2.5 })).toEqual([
      ["cols", "must be a whole number"],
      ["rows", "must be a whole number"],
    ]);
    // Written as floats, as serde_json reads them: not whole numbers, whatever their value.
    expect(sizeProblems(readJson('{"cols": 80.0, "rows": 3e1}') as JsonObject)).toEqual([
      ["cols", "must be a whole number"],
      ["rows", "must be a whole number"],
    ]);
    expect(clampSize({ cols: 1, rows: 1 })).toEqual({ cols: 20, rows: 5 });
    expect(clampSize({ cols: 0, rows: 0 })).toEqual({ cols: 20, rows: 5 });
    expect(clampSize({ cols: 65535, rows: 65535 })).toEqual({ cols: 500, rows: 200 });
    expect(clampSize({ cols: -7, rows: 30 })).toEqual({ cols: 20, rows: 30 });
  });
});

describe("the screen under fuzz (issue 23)", () => {
  it("takes random sizes and random bytes and keeps working", async () => {
    // Seeded (a small LCG): a failure repeats.
    let seed = 23;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const edges = [0, 1, 65535, -1];
    const pick = () => (next(3) === 0 ? edges[next(edges.length)] : next(700));
    const pieces = ["\x1b[", "\x1b]", "\x1b[?1049h", "\x1b[?1049l", "\x1b[2;1r", "\r\n", "你", "\u0301", "\x1b[65535;65535H"];
    const screen = new Screen(80, 24);
    const ROUNDS = 2000;
    for (let round = 0; round < ROUNDS; round++) {
      if (next(4) === 0) {
        const size = clampSize({ cols: pick(), rows: pick() });
        screen.resize(size.cols, size.rows);
        continue;
      }
      const out: number[] = [];
      for (let i = next(40) + 1; i > 0; i--) {
        if (next(2) === 0) out.push(...bytes(pieces[next(pieces.length)]));
        else out.push(next(256));
        if (next(5) === 0) out.push(...bytes("y".repeat(next(400))));
      }
      screen.write(new Uint8Array(out));
      if (round % 100 === 0) screen.snapshot();
    }
    screen.resize(30, 6);
    screen.write(bytes("\x1b[?1049l\x1b[r\x1b[2J\x1b[Hmarker-ok"));
    await written(screen);
    expect(screen.text()).toContain("marker-ok");
  });
});

describe("the smallest rule", () => {
  it("takes the narrowest and the shortest of the sockets that gave a size", () => {
    expect(smallest([{ cols: 120, rows: 40 }, undefined, { cols: 100, rows: 50 }])).toEqual({ cols: 100, rows: 40 });
    expect(smallest([undefined, undefined])).toBeUndefined();
    expect(smallest([])).toBeUndefined();
  });
});

describe("terminal frames", () => {
  it("have the fields of docs/protocol.md in duet serve's order", () => {
    expect(termOpenFrame("t1", "ann", 80, 24)).toBe('{"type":"duet_term","phase":"open","termId":"t1","by":"ann","cols":80,"rows":24}');
    expect(termDataFrame("t1", bytes("hi"), false)).toBe('{"type":"duet_term","phase":"data","termId":"t1","data":"aGk="}');
    expect(termDataFrame("t1", bytes("hi"), true)).toBe('{"type":"duet_term","phase":"data","termId":"t1","data":"aGk=","snapshot":true}');
    expect(termResizeFrame("t1", 100, 30)).toBe('{"type":"duet_term","phase":"resize","termId":"t1","cols":100,"rows":30}');
    expect(termExitFrame("t1", 0)).toBe('{"type":"duet_term","phase":"exit","termId":"t1","exitCode":0}');
    expect(termExitFrame("t1", null)).toBe('{"type":"duet_term","phase":"exit","termId":"t1","exitCode":null}');
    expect(termExitFrame("t1", null, "lost")).toBe('{"type":"duet_term","phase":"exit","termId":"t1","exitCode":null,"reason":"lost"}');
    expect(typingFrame("c1", "ann", "t1")).toBe('{"type":"duet_typing","id":"c1","name":"ann","termId":"t1"}');
    expect(typingFrame("c1", "ann")).toBe('{"type":"duet_typing","id":"c1","name":"ann"}');
  });
});

describe("the agent's context", () => {
  it("holds the screen just before the question, as duet serve words it", () => {
    const question = { id: "000000000001", role: "user" as const, userId: "ann", text: "what failed?", ts: 1 };
    const chat = conversation([question], { cols: 80, rows: 24, text: "$ make\nerror: boom" });
    expect(chat.map((m) => m.role)).toEqual(["system", "user", "user"]);
    expect(chat[1].content).toBe("[the room's terminal, 80x24: its screen now, as text]\n$ make\nerror: boom");
    expect(chat[2].content).toBe("ann: what failed?");
    const empty = conversation([question], { cols: 100, rows: 30, text: "" });
    expect(empty[1].content).toBe("[the room's terminal, 100x30: its screen now, as text]\n(the screen is empty)");
    expect(conversation([question]).length).toBe(2);
  });
});

describe("a scroll-region reset written for an old height", () => {
  // vim's scroll at 7 rows, read after the terminal grew to 30, then its redraw.
  const vim = "\x1b[1;6r\x1b[6;1H\r\n\x1b[1;7r\x1b[5;2Hok\x1b[H\x1b[2Jnarrow\r\n\x1b[1;7r";
  const text = (b: Uint8Array) => new TextDecoder().decode(b);

  it("is whole-screen until the redraw, and left alone after it", () => {
    const stale = new StaleRegion();
    stale.resized(7, 30);
    expect(text(stale.fix(bytes(vim)))).toBe("\x1b[1;6r\x1b[6;1H\r\n\x1b[r\x1b[5;2Hok\x1b[H\x1b[2Jnarrow\r\n\x1b[1;7r");
    expect(text(stale.fix(bytes("\x1b[1;7r")))).toBe("\x1b[1;7r");
  });

  it("is left alone long after the resize", () => {
    const stale = new StaleRegion();
    stale.resized(7, 30, 1_000);
    expect(text(stale.fix(bytes(vim), 1_000 + STALE_FOR_MS + 1))).toBe(vim);
  });

  it("is left alone when the terminal shrank or never resized", () => {
    const stale = new StaleRegion();
    expect(text(stale.fix(bytes(vim)))).toBe(vim);
    stale.resized(30, 7);
    expect(text(stale.fix(bytes(vim)))).toBe(vim);
  });

  it("lets the redraw fill the grown screen from the top", async () => {
    const screen = new Screen(40, 7);
    screen.write(bytes("\x1b[1;6r"));
    screen.resize(40, 30);
    const stale = new StaleRegion();
    stale.resized(7, 30);
    let redraw = "\x1b[1;7r\x1b[H\x1b[2J";
    for (let n = 0; n < 20; n++) redraw += `line ${n}\r\n`;
    screen.write(stale.fix(bytes(redraw)));
    await written(screen);
    const lines = screen.text().split("\n");
    expect(lines[0]).toBe("line 0");
    expect(lines[19]).toBe("line 19");
  });
});
