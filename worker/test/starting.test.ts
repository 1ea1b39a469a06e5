// A room's container that is still starting (Cloudflare only; the stand-in
// never starts slowly, so this one test gives the commands a sandbox that
// answers as a starting container does): a person's command is answered
// 503 with Retry-After and not recorded; the agent's command waits for it.
import { describe, expect, it } from "vitest";
import { Commands, type CommandHost } from "../src/exec";
import { ApiError, response } from "../src/http";
import type { ExecRecord } from "../src/protocol";
import { SandboxStarting, type ExecOutcome, type ExecRequest, type RoomSandbox } from "../src/sandbox/types";

function host(failures: number): { host: CommandHost; frames: string[]; records: ExecRecord[] } {
  const frames: string[] = [];
  const records: ExecRecord[] = [];
  let left = failures;
  let n = 0;
  const sandbox: RoomSandbox = {
    async exec(req: ExecRequest): Promise<ExecOutcome> {
      if (left-- > 0) throw new SandboxStarting(1);
      req.onStdout("ok\n");
      return { exitCode: 0, stdout: "ok\n", stderr: "", durationMs: 1, truncated: false, timedOut: false, interrupted: false };
    },
    interrupt: async () => false,
    readFile: async () => null,
    writeFile: async () => {},
    destroy: async () => {},
  };
  return {
    frames,
    records,
    host: {
      limits: { execTimeoutMs: 1000, maxExecTimeoutMs: 2000, outputCap: 1024 },
      sandbox: () => sandbox,
      generation: () => 0,
      takeExecNumber: () => ++n,
      broadcast: (text) => frames.push(text),
      record: (_g, r) => records.push(r),
    },
  };
}

describe("a starting sandbox", () => {
  it("answers a person's command 503 with Retry-After, announced but not recorded", async () => {
    const h = host(1);
    const end = await new Commands(h.host).run({ cmd: "echo ok", by: "ada", source: "user" });
    expect(end.startingSecs).toBe(1);
    expect(h.records).toEqual([]);
    expect(h.frames.map((f) => JSON.parse(f).phase)).toEqual(["start", "complete"]);
    expect(JSON.parse(h.frames[1]).error).toBe("the sandbox is starting");
    const res = response(ApiError.starting(end.startingSecs ?? 0).reply());
    expect([res.status, res.headers.get("retry-after"), await res.json()]).toEqual([503, "1", { error: "the sandbox is starting" }]);
  });

  it("makes the agent's command wait until it runs", async () => {
    const h = host(1);
    const end = await new Commands(h.host).run({ cmd: "echo ok", by: "agent", source: "agent", signal: new AbortController().signal });
    expect(end.outcome?.stdout).toBe("ok\n");
    expect(h.records.length).toBe(1);
    expect(h.frames.map((f) => JSON.parse(f).phase)).toEqual(["start", "stdout", "complete"]);
  });
});
