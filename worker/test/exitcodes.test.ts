// Exit codes (docs/protocol.md "Commands: exit codes and what persists"): a
// timed-out command answers 124 and an interrupted or cancelled one 130,
// `success:false`, whatever the sandbox reported (a killed shell may say
// null, 137 or -1). The real sandbox's cases are in exec.test.ts; here a
// sandbox that reports other codes drives the room's commands.
import { describe, expect, it } from "vitest";
import { Commands, execResult, runOf } from "../src/exec";
import type { ExecOutcome, ExecRequest, RoomSandbox } from "../src/sandbox/types";

function outcome(o: Partial<ExecOutcome>): ExecOutcome {
  return { exitCode: 0, stdout: "", stderr: "", durationMs: 5, truncated: false, timedOut: false, interrupted: false, ...o };
}

/** Commands on a sandbox answering `report` (after an interrupt, if `waitForInterrupt`). */
function commands(report: ExecOutcome, waitForInterrupt = false) {
  const frames: any[] = [];
  const records: any[] = [];
  const notes: any[] = [];
  const moves: string[] = [];
  let release = () => {};
  const interrupted = new Promise<void>((ok) => (release = ok));
  const sandbox = {
    exec: async (_req: ExecRequest) => {
      if (waitForInterrupt) await interrupted;
      return report;
    },
    interrupt: async () => {
      release();
      return true;
    },
  } as unknown as RoomSandbox;
  let n = 0;
  const c = new Commands({
    limits: { execTimeoutMs: 1000, maxExecTimeoutMs: 1000, outputCap: 1024, maxProcesses: 8, tunnelBytesPerSec: 1 << 26, autoCheckpoints: 0, checkpointTtlSecs: 60, diskBytes: 1 << 30, approvalTimeoutMs: 1000 },
    sandbox: () => sandbox,
    generation: () => 0,
    takeExecNumber: () => ++n,
    broadcast: (text) => frames.push(JSON.parse(text)),
    record: (_g, r) => records.push(r),
    started: () => {},
    listed: () => {},
    printed: () => {},
    unstarted: () => {},
    shellCwd: () => "/workspace",
    shellMoved: (_g, cwd) => moves.push(cwd),
    note: (_g, event, text) => notes.push({ event, text }),
    noteAfterReply: (_g, event, text) => notes.push({ event, text }),
  });
  return { c, frames, records, notes, moves };
}

describe("exit codes", () => {
  it("are 124 after a timeout, in the result, the frame and the record", async () => {
    for (const exitCode of [null, 137, -1, 0]) {
      const { c, frames, records } = commands(outcome({ exitCode, timedOut: true }));
      const end = await c.run({ cmd: "sleep 9", by: "ada", source: "user" });
      const result = execResult(end, end.outcome!);
      expect([result.success, result.exitCode, result.timedOut], String(exitCode)).toEqual([false, 124, true]);
      expect(frames.at(-1)).toMatchObject({ phase: "complete", exitCode: 124, timedOut: true });
      expect(records[0].exitCode).toBe(124);
    }
  });

  it("are 130 after an interrupt, also when the sandbox did not say it was one", async () => {
    for (const report of [outcome({ exitCode: null, interrupted: true }), outcome({ exitCode: 143 })]) {
      const { c, frames } = commands(report, true);
      const running = c.run({ cmd: "sleep 9", by: "ada", source: "user" });
      await new Promise((ok) => setTimeout(ok, 0));
      expect(await c.interrupt()).toBe(true);
      const end = await running;
      const result = execResult(end, end.outcome!);
      expect([result.success, result.exitCode, result.interrupted, result.timedOut]).toEqual([false, 130, true, false]);
      expect(frames.at(-1)).toMatchObject({ phase: "complete", exitCode: 130, interrupted: true });
    }
  });

  it("are 130 when the agent's turn is cancelled during its command", async () => {
    const { c } = commands(outcome({ exitCode: null, timedOut: true }), true);
    const turn = new AbortController();
    const running = c.run({ cmd: "sleep 9", by: "agent", source: "agent", signal: turn.signal });
    await new Promise((ok) => setTimeout(ok, 0));
    turn.abort();
    const run = runOf(await running);
    expect(run.exitCode).toBe(130);
  });

  it("come with the room's record of a replaced shell, and of a person's interrupt only", async () => {
    const stopped = commands(outcome({ exitCode: null, shell: "stopped", error: "restarted", cwd: "/tmp" }));
    await stopped.c.run({ cmd: "kill -STOP $$", by: "ada", source: "user" });
    expect(stopped.notes.map((n) => n.event)).toEqual([{ kind: "shell", by: "ada", reason: "stopped", cwd: "/tmp", reset: false, execId: "x00000000001" }]);
    expect([stopped.frames.at(-1).cwd, stopped.moves]).toEqual(["/tmp", ["/tmp"]]);
    const exited = commands(outcome({ exitCode: 4, shell: "exited", error: "restarted", cwd: "/workspace" }));
    await exited.c.run({ cmd: "exit 4", by: "ada", source: "user" });
    expect(exited.notes.map((n) => [n.event.reason, n.event.reset])).toEqual([["exit", true]]);
    // A timeout says so whatever the shell reported; an interrupt is the interrupt's record.
    const late = commands(outcome({ exitCode: null, timedOut: true, shell: "stopped" }));
    await late.c.run({ cmd: "sleep 9", by: "ada", source: "user" });
    expect(late.notes.map((n) => [n.event.reason, n.event.cwd])).toEqual([["timeout", "/workspace"]]);
    const cut = commands(outcome({ exitCode: null, interrupted: true, shell: "stopped" }), true);
    const running = cut.c.run({ cmd: "sleep 9", by: "ada", source: "user" });
    await new Promise((ok) => setTimeout(ok, 0));
    expect(await cut.c.interrupt(undefined, "bob")).toBe(true);
    await running;
    expect(cut.notes.map((n) => n.event)).toEqual([{ kind: "interrupt", by: "bob", execId: "x00000000001", cmd: "sleep 9" }]);
    const turn = new AbortController();
    const cancelled = commands(outcome({ exitCode: null, interrupted: true }), true);
    const agent = cancelled.c.run({ cmd: "sleep 9", by: "agent", source: "agent", signal: turn.signal });
    await new Promise((ok) => setTimeout(ok, 0));
    turn.abort();
    await agent;
    expect(cancelled.notes).toEqual([]);
    // A command that could not start leaves the shell where it was, and says nothing of it.
    const failed = commands(outcome({}));
    const gone = new AbortController();
    gone.abort();
    await failed.c.run({ cmd: "true", by: "agent", source: "agent", signal: gone.signal });
    expect(["cwd" in failed.frames.at(-1), failed.moves, failed.notes]).toEqual([false, [], []]);
  });

  it("are left alone otherwise", async () => {
    const { c } = commands(outcome({ exitCode: 3 }));
    const end = await c.run({ cmd: "exit 3", by: "ada", source: "user" });
    expect(execResult(end, end.outcome!)).toMatchObject({ success: false, exitCode: 3 });
  });
});
