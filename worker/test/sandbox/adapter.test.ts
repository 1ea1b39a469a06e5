/// <reference types="@cloudflare/vitest-plugin/types" />
// The adapter through the real getSandbox, the stand-in and a real
// `duet serve` sandbox: what the room agent sees of a command and a file.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { roomSandbox, sandboxId } from "../../src/sandbox/adapter";
import type { SandboxStandIn } from "../../dev/standin";
import { DiskFull, NotRegular, SandboxStarting, type ExecRequest } from "../../src/sandbox/types";

const testEnv = env as unknown as Env;

function request(cmd: string, extra: Partial<ExecRequest> = {}) {
  const out = { stdout: "", stderr: "" };
  const req: ExecRequest = {
    cmd,
    timeoutMs: 30_000,
    outputCap: 1024 * 1024,
    onStdout: (d) => (out.stdout += d),
    onStderr: (d) => (out.stderr += d),
    ...extra,
  };
  return { req, out };
}

describe("sandbox ids", () => {
  it("keep rooms that differ only in case apart, and fit 63 characters", async () => {
    const long = "A".repeat(63);
    const ids = await Promise.all(["Room", "room", "ROOM", long, long.toLowerCase()].map(sandboxId));
    expect(new Set(ids).size).toBe(5);
    for (const id of ids) {
      expect(id.length).toBeLessThanOrEqual(63);
      expect(id).toMatch(/^[a-z0-9][a-z0-9_-]*[a-z0-9]$/);
    }
  });
});

describe("exec", () => {
  it("streams stdout and stderr and reports the exit code", async () => {
    const box = roomSandbox(testEnv, "exec-a");
    const { req, out } = request("echo one; echo two >&2; exit 3");
    const outcome = await box.exec(req);
    expect(outcome.exitCode).toBe(3);
    expect(outcome.stdout).toBe("one\n");
    expect(outcome.stderr).toBe("two\n");
    expect(out).toEqual({ stdout: "one\n", stderr: "two\n" });
    expect(outcome.timedOut || outcome.interrupted || outcome.truncated).toBe(false);
  });

  it("keeps the shell's directory and exports between commands; cwd and env for one command", async () => {
    const box = roomSandbox(testEnv, "exec-b");
    await box.exec(request("cd /tmp && export GREETING=hi").req);
    expect((await box.exec(request('pwd; echo "$GREETING"').req)).stdout).toBe("/tmp\nhi\n");
    const once = await box.exec(request('pwd; echo "$ONCE"', { cwd: "/workspace", env: { ONCE: "x" } }).req);
    expect(once.stdout).toBe("/workspace\nx\n");
    expect((await box.exec(request('echo "[$ONCE]"').req)).stdout).toBe("[]\n");
  });

  it("says where the shell is after each command, and that a shell ended", async () => {
    const box = roomSandbox(testEnv, "exec-cwd");
    const moved = await box.exec(request("mkdir -p sub && cd sub").req);
    expect([moved.cwd, moved.shell, moved.error]).toEqual(["/workspace/sub", undefined, undefined]);
    expect((await box.exec(request("pwd", { cwd: "/tmp" }).req)).cwd).toBe("/workspace/sub");
    const ended = await box.exec(request("exit 4").req);
    expect([ended.exitCode, ended.shell, typeof ended.error]).toEqual([4, "exited", "string"]);
  });

  it("rooms differing in case have separate sandboxes", async () => {
    await roomSandbox(testEnv, "CaseRoom").writeFile("who", new TextEncoder().encode("upper"));
    expect(await roomSandbox(testEnv, "caseroom").readFile("who")).toBeNull();
  });

  it("kills a command at its timeout", async () => {
    const box = roomSandbox(testEnv, "exec-c");
    const outcome = await box.exec(request("sleep 30", { timeoutMs: 300 }).req);
    expect(outcome.timedOut).toBe(true);
    expect(outcome.exitCode).not.toBe(0);
    // The shell is usable afterwards.
    expect((await box.exec(request("echo after").req)).stdout).toBe("after\n");
  });

  it("cuts output at the cap and kills the command", async () => {
    const box = roomSandbox(testEnv, "exec-d");
    const { req, out } = request("yes x | head -c 100000; sleep 30", { outputCap: 1000 });
    const outcome = await box.exec(req);
    expect(outcome.truncated).toBe(true);
    expect(outcome.stdout.length).toBeLessThanOrEqual(1000);
    expect(out.stdout).toBe(outcome.stdout);
    expect(outcome.exitCode).not.toBe(0);
  });

  it("interrupt sends SIGINT to the running command", async () => {
    const box = roomSandbox(testEnv, "exec-e");
    expect(await box.interrupt()).toBe(false);
    let started!: () => void;
    const ready = new Promise<void>((ok) => (started = ok));
    // The trap proves a real SIGINT reached the command (not just a kill).
    const script = "trap 'echo got-int; exit 5' INT; echo ready; while :; do sleep 0.1; done";
    const { req, out } = request(`bash -c "${script}"`, {
      onStdout: (d) => {
        out.stdout += d;
        if (out.stdout.includes("ready")) started();
      },
    });
    const running = box.exec(req);
    await ready;
    expect(await box.interrupt()).toBe(true);
    const outcome = await running;
    expect(outcome.interrupted).toBe(true);
    expect(outcome.stdout).toContain("got-int");
    // The whole command ends with the interrupt: 130, whatever the trap exits with.
    expect(outcome.exitCode).toBe(130);
  });
});

describe("files", () => {
  it("writes and reads bytes, creating folders; absent is null", async () => {
    const box = roomSandbox(testEnv, "files-a");
    const bytes = new Uint8Array([0, 1, 2, 250, 255, 10]);
    await box.writeFile("deep/er/data.bin", bytes);
    expect(await box.readFile("deep/er/data.bin")).toEqual(bytes);
    expect(await box.readFile("nope.txt")).toBeNull();
    expect((await box.exec(request("wc -c < deep/er/data.bin").req)).stdout.trim()).toBe("6");
  });

  // Many parts are server_files_list's 24 MiB file: this room's disk is 1 MiB.
  it("an upload from chunks keeps the file's mode, and one whose body fails leaves the old file and no parts", async () => {
    const box = roomSandbox(testEnv, "files-parts");
    await box.exec(request("printf old > kept.sh && chmod 750 kept.sh").req);
    const whole = new Uint8Array(300 * 1024 + 3).map((_, i) => i % 251);
    async function* pieces() {
      for (let at = 0; at < whole.length; at += 70_001) yield whole.subarray(at, at + 70_001);
    }
    expect(await box.writeFileFrom("kept.sh", pieces())).toBe(whole.length);
    expect(await box.readFile("kept.sh")).toEqual(whole);
    expect((await box.exec(request("stat -c %a kept.sh").req)).stdout.trim()).toBe("750");
    async function* cut() {
      yield new Uint8Array(100 * 1024);
      throw new Error("the client went away");
    }
    await expect(box.writeFileFrom("kept.sh", cut())).rejects.toThrow("the client went away");
    expect(await box.readFile("kept.sh")).toEqual(whole);
    expect((await box.listFiles(""))?.map((e) => e.name)).toEqual(["kept.sh"]);
  });

  it("a FIFO is NotRegular at once, never opened", async () => {
    const box = roomSandbox(testEnv, "files-fifo");
    await box.exec(request("mkfifo ff").req);
    expect(await box.openFile("ff").catch((e) => e)).toBeInstanceOf(NotRegular);
    expect(await box.readFile("ff").catch((e) => e)).toBeInstanceOf(NotRegular);
  });

  it("a full disk is DiskFull", async () => {
    const box = roomSandbox(testEnv, "files-full");
    const error = await box.writeFile("big.bin", new Uint8Array(3 * 1024 * 1024)).catch((e) => e);
    expect(error).toBeInstanceOf(DiskFull);
  });

  it("destroy removes the room's files and processes", async () => {
    const box = roomSandbox(testEnv, "files-b");
    await box.writeFile("keep.txt", new TextEncoder().encode("x"));
    await box.destroy();
    expect(await box.readFile("keep.txt")).toBeNull();
  });
});

describe("a starting container", () => {
  it("is SandboxStarting with the delay to retry after, then answers", async () => {
    const room = "cold-start";
    const id = testEnv.Sandbox.idFromName(await sandboxId(room));
    const stub = testEnv.Sandbox.get(id) as unknown as DurableObjectStub<SandboxStandIn>;
    await runInDurableObject(stub, (instance: SandboxStandIn) => {
      instance.startSecs = 1;
    });
    const box = roomSandbox(testEnv, room);
    const refused = await box.exec(request("echo up").req).catch((e) => e);
    expect(refused).toBeInstanceOf(SandboxStarting);
    expect((refused as SandboxStarting).retryAfterSecs).toBe(1);
    expect(await box.readFile("x").catch((e) => e)).toBeInstanceOf(SandboxStarting);
    // Retried after Retry-After, as clients do, it answers.
    const deadline = Date.now() + 30_000;
    for (;;) {
      await new Promise((ok) => setTimeout(ok, 1000));
      const answer = await box.exec(request("echo up").req).catch((e) => e);
      if (!(answer instanceof SandboxStarting)) {
        expect(answer.stdout).toBe("up\n");
        break;
      }
      expect(Date.now()).toBeLessThan(deadline);
    }
  });
});
