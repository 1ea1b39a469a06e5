/// <reference types="@cloudflare/vitest-plugin/types" />
// The stand-in reproduces the SDK 0.12.10 behaviour Duet relies on: a
// container that sleeps loses its files and processes (so the workspace
// survives only through the R2 backup), and killProcess ignores its signal.
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { roomSandbox, sandboxId } from "../../src/sandbox/adapter";
import { backupPrefix } from "../../src/sandbox/backup";
import type { ExecRequest } from "../../src/sandbox/types";

const testEnv = env as unknown as Env;
const WAIT_MS = 40_000;

function request(cmd: string): ExecRequest {
  return { cmd, timeoutMs: 30_000, outputCap: 1 << 20, onStdout() {}, onStderr() {} };
}

async function objectId(room: string): Promise<DurableObjectId> {
  return testEnv.Sandbox.idFromName(await sandboxId(room));
}

/** Waits until the room's stand-in container went to sleep (its idle timer is 2 s here). */
async function asleep(room: string): Promise<void> {
  const stub = testEnv.Sandbox.get(await objectId(room));
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const awake = await runInDurableObject(stub, (_, state) => state.storage.get<boolean>("awake"));
    if (awake === false) return;
    await new Promise((ok) => setTimeout(ok, 250));
  }
  throw new Error(`room ${room} never went to sleep`);
}

/** Counts processes running `sleep 3171` (pgrep leaves itself out). */
const SLEEPERS = "pgrep -c -f 'sleep 3171'";

describe("sleep", () => {
  it("keeps /workspace through the R2 backup; processes and shell state are gone", async () => {
    const room = "sleepy";
    const box = roomSandbox(testEnv, room);
    const setup = await box.exec(
      request(`echo kept > note.txt && mkdir -p sub && printf 'deep' > sub/f && cd /tmp && export MARK=1 && { sleep 3171 & } && sleep 0.2 && ${SLEEPERS}`),
    );
    expect(setup.stdout.trim()).toBe("1");
    await box.writeFile("bin.dat", new Uint8Array([0, 255, 7]));
    await asleep(room);
    const listed = await testEnv.WORKSPACES.list({ prefix: backupPrefix((await objectId(room)).toString()) });
    expect(listed.objects.map((o) => o.key)).toContain(`${backupPrefix((await objectId(room)).toString())}manifest`);
    const after = await box.exec(request(`cat note.txt sub/f; echo; pwd; echo "[$MARK]"; ${SLEEPERS}; ls -A`));
    expect(after.stdout).toBe("kept\ndeep\n/workspace\n[]\n0\nbin.dat\nnote.txt\nsub\n");
    expect(await box.readFile("bin.dat")).toEqual(new Uint8Array([0, 255, 7]));
  });

  it("wipes the workspace: without its backup nothing comes back", async () => {
    const room = "sleepy-wiped";
    const box = roomSandbox(testEnv, room);
    await box.writeFile("lost.txt", new TextEncoder().encode("x"));
    await asleep(room);
    const prefix = backupPrefix((await objectId(room)).toString());
    const listed = await testEnv.WORKSPACES.list({ prefix });
    expect(listed.objects.length).toBeGreaterThan(0);
    await testEnv.WORKSPACES.delete(listed.objects.map((o) => o.key));
    expect(await box.readFile("lost.txt")).toBeNull();
    expect((await box.exec(request("ls -A | wc -l"))).stdout.trim()).toBe("0");
  });

  it("cleanup removes the backup too", async () => {
    const room = "sleepy-cleaned";
    const box = roomSandbox(testEnv, room);
    await box.writeFile("gone.txt", new TextEncoder().encode("x"));
    await asleep(room);
    await box.destroy();
    const listed = await testEnv.WORKSPACES.list({ prefix: backupPrefix((await objectId(room)).toString()) });
    expect(listed.objects).toEqual([]);
    expect(await box.readFile("gone.txt")).toBeNull();
  });
});

/** Reads SSE events of an execStream until `until` matches one. */
async function readEvents(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  seen: Record<string, any>[],
  until: (e: Record<string, any>) => boolean,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the stream ended; events: ${JSON.stringify(seen)}`);
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = JSON.parse(buffer.slice(0, end).replace(/^data: /, ""));
      buffer = buffer.slice(end + 2);
      seen.push(event);
      if (until(event)) return;
    }
  }
}

describe("killProcess", () => {
  it("ignores its signal, as SDK 0.12.10 does: the command ends without the signal's trap", async () => {
    const name = "killprocess-test";
    const stub = testEnv.Sandbox.get(testEnv.Sandbox.idFromName(name)) as any;
    await stub.configure({ sandboxName: { name } });
    const script = "trap 'echo got-usr1' USR1; echo ready; while :; do sleep 0.1; done";
    const stream: ReadableStream<Uint8Array> = await stub.execStream(`bash -c "${script}"`, {});
    const reader = stream.getReader();
    const seen: Record<string, any>[] = [];
    await readEvents(reader, seen, (e) => e.type === "stdout" && String(e.data).includes("ready"));
    const pid = seen.find((e) => e.type === "start")?.pid;
    expect(typeof pid).toBe("number");
    await stub.killProcess(String(pid), "SIGUSR1");
    await readEvents(reader, seen, (e) => e.type === "complete" || e.type === "error");
    const out = seen.filter((e) => e.type === "stdout").map((e) => e.data).join("");
    expect(out).not.toContain("got-usr1");
    expect(seen.at(-1)?.type).toBe("complete");
    expect(seen.at(-1)?.exitCode).not.toBe(0);
  });
});

describe("eviction", () => {
  it("keeps the stand-in's name: getSandbox configures only once per isolate", async () => {
    const room = "evicted";
    const box = roomSandbox(testEnv, room);
    await box.writeFile("here.txt", new TextEncoder().encode("still"));
    const stub = testEnv.Sandbox.get(await objectId(room));
    await evictDurableObject(stub);
    // The same isolate's getSandbox does not configure it again.
    expect(new TextDecoder().decode((await box.readFile("here.txt")) ?? new Uint8Array())).toBe("still");
    expect((await box.exec(request("cat here.txt"))).stdout).toBe("still");
  });
});
