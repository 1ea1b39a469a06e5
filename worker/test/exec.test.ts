// Commands through the Worker, the room's Durable Object, the stand-in
// Sandbox and the real sandbox of `duet serve`: streamed to every client,
// answered with their result, recorded in the state (tests/it/neutral/server_exec.rs).
import { describe, expect, it } from "vitest";
import { execFrames, joined, post, room, ws } from "./support";

describe("exec", () => {
  it("streams a command to everyone and answers its result", async () => {
    const r = room("x");
    const ada = await joined(r, "user=ada");
    const bob = await joined(r, "user=bob");
    const { status, body } = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo hi; echo oops >&2", userId: "ada" });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.sandboxName).toBe(`sandbox-${r}`);
    const result = body.result;
    expect(result).toMatchObject({ success: true, exitCode: 0, stdout: "hi\n", stderr: "oops\n", command: "echo hi; echo oops >&2" });
    expect(Number.isInteger(result.duration)).toBe(true);
    expect(result.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Object.keys(result)).toEqual(["success", "exitCode", "stdout", "stderr", "command", "duration", "timestamp"]);
    for (const s of [ada, bob]) {
      const { start, out, err, complete } = await execFrames(s);
      expect(start).toEqual({ type: "duet_exec", phase: "start", execId: "x00000000001", cmd: "echo hi; echo oops >&2", by: "ada", source: "user" });
      expect([out, err]).toEqual(["hi\n", "oops\n"]);
      expect(Object.keys(complete)).toEqual(["type", "phase", "execId", "exitCode", "duration", "cwd"]);
      expect([complete.exitCode, complete.cwd]).toEqual([0, "/workspace"]);
    }
    const carl = await ws(r);
    await carl.next();
    const record = (await carl.next()).state.execs[0];
    expect(record).toEqual({
      execId: "x00000000001",
      cmd: "echo hi; echo oops >&2",
      by: "ada",
      source: "user",
      stdout: "hi\n",
      stderr: "oops\n",
      exitCode: 0,
      duration: record.duration,
      ts: record.ts,
    });
  });

  it("reports failures and timeouts; cwd and env are for one command", async () => {
    const r = room("x");
    let res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "exit 3" });
    expect([res.status, res.body.result.success, res.body.result.exitCode]).toEqual([200, false, 3]);
    res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "sleep 30", timeoutMs: 300 });
    expect(res.body.result.timedOut, JSON.stringify(res.body)).toBe(true);
    expect(res.body.result.success).toBe(false);
    expect(res.body.result.exitCode).toBe(124);
    res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: 'pwd; echo "$GREETING"', cwd: "/tmp", env: { GREETING: "hello" } });
    expect(res.body.result.stdout, JSON.stringify(res.body)).toBe("/tmp\nhello\n");
    res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: 'pwd; echo "[$GREETING]"' });
    expect(res.body.result.stdout, JSON.stringify(res.body)).toBe("/workspace\n[]\n");
  });

  it("interrupts the running command", async () => {
    const r = room("x");
    const ada = await joined(r, "user=ada");
    const running = post(`/api/rooms/${r}/sandbox/exec`, { cmd: "sleep 60" });
    const start = await ada.until((f) => f.type === "duet_exec" && f.phase === "start");
    // Not that one: it is not the running command.
    expect((await post(`/api/rooms/${r}/sandbox/interrupt`, { execId: "x99999999999" })).body).toEqual({ interrupted: false });
    let interrupted = false;
    for (let i = 0; i < 100 && !interrupted; i++) {
      const res = await post(`/api/rooms/${r}/sandbox/interrupt`, { execId: start.execId });
      expect(res.status).toBe(200);
      interrupted = res.body.interrupted === true;
      if (!interrupted) await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(interrupted).toBe(true);
    const { status, body } = await running;
    expect(status).toBe(200);
    expect(body.result.interrupted, JSON.stringify(body)).toBe(true);
    expect(body.result.success).toBe(false);
    expect(body.result.exitCode).toBe(130);
    const complete = await ada.until((f) => f.phase === "complete");
    expect(complete.interrupted).toBe(true);
    expect(complete.exitCode).toBe(130);
    // The record says so too.
    const bob = await ws(r);
    await bob.next();
    expect((await bob.next()).state.execs[0].exitCode).toBe(130);
  });

  it("answers rpc exec with the HTTP body and keeps twenty commands in the state", async () => {
    const r = room("x");
    const ada = await joined(r, "user=ada");
    for (let n = 1; n <= 21; n++) {
      const answer = await ada.rpc(n, "exec", [{ cmd: `echo ${n}` }]);
      expect(answer.success, JSON.stringify(answer)).toBe(true);
      expect(answer.result.result.stdout).toBe(`${n}\n`);
      expect(answer.result.sandboxName).toBe(`sandbox-${r}`);
    }
    const bob = await ws(r);
    await bob.next();
    const execs = (await bob.next()).state.execs;
    expect(execs.length).toBe(20);
    expect(execs[0].stdout).toBe("2\n");
    expect(execs[19].execId).toBe("x00000000021");
    expect(execs[19].by).toBe("ada");
  });

  it("caps stored outputs at 16 KiB", async () => {
    const r = room("x");
    const { body } = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "head -c 40000 /dev/zero | tr '\\0' a" });
    expect(body.result.stdout.length).toBe(40000);
    const s = await ws(r);
    await s.next();
    const record = (await s.next()).state.execs[0];
    expect(record.stdout.length).toBe(16 * 1024);
    expect(record.truncated).toBe(true);
  });

  it("destroys the workspace on cleanup; command ids go on", async () => {
    const r = room("x");
    await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "echo kept > f.txt" });
    expect((await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "cat f.txt" })).body.result.stdout).toBe("kept\n");
    expect(await post(`/api/rooms/${r}/cleanup`, {})).toMatchObject({ status: 200, body: { cleaned: true, roomId: r } });
    const res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd: "ls -A" });
    expect(res.body.result.stdout, JSON.stringify(res.body)).toBe("");
    const s = await ws(r);
    await s.next();
    expect((await s.next()).state.execs[0].execId).toBe("x00000000003");
  });
});
