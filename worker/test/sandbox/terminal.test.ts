/// <reference types="@cloudflare/vitest-plugin/types" />
// The seam's openTerminal through the real getSandbox (a session's
// `terminal()`, the SDK's PTY WebSocket) and the stand-in, on a real `duet
// serve` terminal: output bytes, input, resize, the shell's exit with its
// status, and close() ending it (the next open is a fresh shell).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { roomSandbox } from "../../src/sandbox/adapter";
import type { Pty } from "../../src/sandbox/types";

const testEnv = env as unknown as Env;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** A terminal opened through the seam, with everything it wrote and its exit. */
async function opened(room: string, termId: string) {
  const seen = { out: "", exit: undefined as number | null | undefined };
  const pty: Pty = await roomSandbox(testEnv, room).openTerminal(termId, { cols: 80, rows: 24 }, {
    onData: (bytes) => (seen.out += decoder.decode(bytes, { stream: true })),
    onExit: (code) => (seen.exit = code),
  });
  return { pty, seen };
}

async function until(what: () => boolean, why: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`never: ${why}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

describe("the terminal through the seam", () => {
  it("carries input, output and resizes, and reports the shell's exit status", async () => {
    const { pty, seen } = await opened("term-seam-a", "t1");
    pty.write(encoder.encode("echo seam-$((20+1))\r"));
    await until(() => seen.out.includes("seam-21"), `the echo (got ${JSON.stringify(seen.out)})`);
    pty.resize({ cols: 100, rows: 30 });
    pty.write(encoder.encode("stty size\r"));
    await until(() => seen.out.includes("30 100"), `the new size (got ${JSON.stringify(seen.out)})`);
    pty.write(encoder.encode("exit 7\r"));
    await until(() => seen.exit !== undefined, "the exit");
    expect(seen.exit).toBe(7);
  });

  it("ends its processes on close; the next open is a fresh shell", async () => {
    const first = await opened("term-seam-b", "t1");
    first.pty.write(encoder.encode("marker=first-shell; echo set-$marker\r"));
    await until(() => first.seen.out.includes("set-first-shell"), "the first shell");
    await first.pty.close();
    expect(first.seen.exit).toBeUndefined();
    const second = await opened("term-seam-b", "t2");
    second.pty.write(encoder.encode('echo "got-[$marker]"\r'));
    await until(() => second.seen.out.includes("got-[]"), `a fresh shell (got ${JSON.stringify(second.seen.out)})`);
    await second.pty.close();
  });
});
