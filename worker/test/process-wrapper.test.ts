// The process wrapper the adapter starts on a real container
// (src/sandbox/signal.ts), run for real in bash in the stand-in's sandbox:
// its program's output and exit status pass through, its group takes the
// signals the adapter sends (143 after TERM, 137 after KILL), and the rest
// of the group goes when its first process ends.
import { describe, expect, it } from "vitest";
import { groupSignalCommand, processCommand } from "../src/sandbox/signal";
import { call, get, post, room, sleep, type Json } from "./support";

const WAIT_MS = 40_000;

/** A command in the room's shell (the wrapper runs in a subshell there: it `exec`s). */
async function exec(r: string, cmd: string): Promise<Json> {
  const res = await post(`/api/rooms/${r}/sandbox/exec`, { cmd });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.result;
}

/** Runs the wrapper as a background process of the room (so that commands can signal it meanwhile). */
async function wrapped(r: string, id: string, cmd: string): Promise<string> {
  const res = await post(`/api/rooms/${r}/processes`, { cmd: processCommand(id, cmd) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const deadline = Date.now() + WAIT_MS;
  // Its group's id is written once the program runs.
  while ((await exec(r, `cat /tmp/duet-processes/${id} 2>/dev/null`)).stdout === "") {
    if (Date.now() > deadline) throw new Error("the wrapper never wrote its group");
    await sleep(100);
  }
  return res.body.process.id;
}

async function ended(r: string, id: string): Promise<Json> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const p = (await get(`/api/rooms/${r}/processes/${id}`)).body.process;
    if (p.status !== "running") return p;
    if (Date.now() > deadline) throw new Error(`${id} never ended`);
    await sleep(100);
  }
}

describe("the process wrapper", () => {
  it("passes its program's output and exit status through, in /workspace with stdin from /dev/null", async () => {
    const r = room("wrap");
    await exec(r, "cd /tmp");
    const result = await exec(r, `(${processCommand("duet-p1-a", "echo \"it's $(pwd)\"; cat; echo err >&2; exit 7")})`);
    expect(result.stdout).toBe("it's /workspace\n");
    expect(result.stderr).toBe("err\n");
    expect(result.exitCode).toBe(7);
    // It leaves no group file behind.
    expect((await exec(r, "ls /tmp/duet-processes")).stdout).toBe("");
  });

  it("takes TERM to its group (143), and KILL when TERM is ignored (137)", async () => {
    const r = room("wrap");
    const polite = await wrapped(r, "duet-p1-b", "sleep 600");
    await exec(r, groupSignalCommand("TERM", "duet-p1-b"));
    expect(await ended(r, polite)).toMatchObject({ status: "exited", exitCode: 143 });
    const stubborn = await wrapped(r, "duet-p2-b", "trap '' TERM; while :; do sleep 0.1; done");
    await exec(r, groupSignalCommand("TERM", "duet-p2-b"));
    await sleep(300);
    expect((await get(`/api/rooms/${r}/processes/${stubborn}`)).body.process.status).toBe("running");
    await exec(r, groupSignalCommand("KILL", "duet-p2-b"));
    expect(await ended(r, stubborn)).toMatchObject({ status: "exited", exitCode: 137 });
  });

  it("ends the rest of the group with its first process", async () => {
    const r = room("wrap");
    const result = await exec(r, `(${processCommand("duet-p1-c", "sleep 3173 & echo started")})`);
    expect(result.stdout).toBe("started\n");
    expect((await exec(r, "pgrep -c -f 'sleep 3173' || true")).stdout.trim()).toBe("0");
    expect((await call("GET", `/api/rooms/${r}/processes`)).body.processes).toEqual([]);
  });
});
