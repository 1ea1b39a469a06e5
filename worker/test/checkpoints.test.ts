// Checkpoints, restore and fork through the Worker and the stand-in's
// createBackup/restoreBackup (a tar of the real sandbox's /workspace in the
// R2 that miniflare simulates), as docs/protocol.md "Checkpoints, restore
// and fork" says a client sees them.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { call, get, joined, post, room, script, type Json } from "./support";

const testEnv = env as unknown as Env;

const put = (r: string, path: string, text: string, user = "ada") => call("PUT", `/api/rooms/${r}/files/${path}?userId=${user}`, text);
const read = async (r: string, path: string) => {
  const res = await get(`/api/rooms/${r}/files/${path}`);
  return res.status === 200 ? String(res.body) : res.status;
};
const exec = (r: string, cmd: string) => post(`/api/rooms/${r}/sandbox/exec`, { cmd, userId: "ada" });
const messages = async (r: string): Promise<Json[]> => (await get(`/api/rooms/${r}/messages`)).body.messages;
const events = async (r: string) => (await messages(r)).filter((m) => m.event).map((m) => m.event);

describe("checkpoints", () => {
  it("copies /workspace, restores it, and a later write never touches the copy", async () => {
    const r = room("cp");
    expect((await put(r, "a.txt", "one")).status).toBe(200);
    expect((await exec(r, "mkdir -p d && printf xy > d/b && ln -s a.txt link")).status).toBe(200);
    const made = await post(`/api/rooms/${r}/checkpoints`, { name: "before", userId: "ada" });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const c = made.body.checkpoint;
    expect(Object.keys(made.body)).toEqual(["checkpoint"]);
    // 3 + 2 bytes of files, and the link's target "a.txt".
    expect(c).toEqual({ id: "c1", name: "before", ts: c.ts, by: "ada", size: 10, auto: false, expiresAt: c.ts + 7 * 24 * 3600 * 1000 });
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [c] });

    await put(r, "a.txt", "two");
    await exec(r, "rm -r d && echo new > new.txt");
    const restored = await post(`/api/rooms/${r}/checkpoints/c1/restore`, { userId: "bob" });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toEqual({ restored: true });
    expect(await read(r, "a.txt")).toBe("one");
    expect(await read(r, "d/b")).toBe("xy");
    expect(await read(r, "new.txt")).toBe(404);
    expect((await exec(r, "readlink link")).body.result.stdout).toBe("a.txt\n");

    // A write after the restore does not change the checkpoint: restoring again brings "one" back.
    await put(r, "a.txt", "three");
    expect((await post(`/api/rooms/${r}/checkpoints/c1/restore`, {})).status).toBe(200);
    expect(await read(r, "a.txt")).toBe("one");
    expect((await get(`/api/rooms/${r}/checkpoints`)).body.checkpoints.map((x: Json) => x.id)).toEqual(["c1"]);

    const recorded = (await events(r)).filter((e) => e.kind === "checkpoint" || e.kind === "restore");
    expect(recorded).toEqual([
      { kind: "checkpoint", by: "ada", checkpointId: "c1", name: "before" },
      { kind: "restore", by: "bob", checkpointId: "c1", name: "before" },
      { kind: "restore", by: "anonymous", checkpointId: "c1", name: "before" },
    ]);
    const texts = (await messages(r)).filter((m) => m.event?.kind === "restore").map((m) => [m.role, m.userId, m.text]);
    expect(texts[0]).toEqual(["system", "bob", "bob restored checkpoint before: /workspace is as it was then"]);
  });

  it("names, ids and errors as the contract says", async () => {
    const r = room("cpe");
    await put(r, "f", "x");
    const bad = await post(`/api/rooms/${r}/checkpoints`, { name: "-no" });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: "invalid request", details: { name: ["must start with a letter or a digit"] } });
    const long = await post(`/api/rooms/${r}/checkpoints`, { name: "a b" });
    expect(long.body.details.name).toEqual(["may hold only letters, digits, '.', '_' and '-'"]);

    const first = await post(`/api/rooms/${r}/checkpoints`, {});
    expect(first.body.checkpoint).toMatchObject({ id: "c1", name: "checkpoint-1", by: "anonymous", auto: false });
    const again = await post(`/api/rooms/${r}/checkpoints`, { name: "checkpoint-1" });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("a checkpoint has that name");
    expect(Object.keys(again.body.details)).toEqual(["name"]);

    for (const [method, path] of [
      ["POST", `/api/rooms/${r}/checkpoints/c9/restore`],
      ["DELETE", `/api/rooms/${r}/checkpoints/c9`],
    ]) {
      const missing = await call(method, path);
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ error: "no such checkpoint", details: { checkpointId: ['no checkpoint "c9" in this room'] } });
    }
    expect((await call("DELETE", `/api/rooms/${r}/checkpoints/c1`)).body).toEqual({ deleted: true });
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
    // Ids are never reused.
    expect((await post(`/api/rooms/${r}/checkpoints`, { name: "checkpoint-1" })).body.checkpoint.id).toBe("c2");
  });

  it("answers over rpc with the HTTP shapes, and patches the state", async () => {
    const r = room("cpr");
    await put(r, "f", "x");
    const s = await joined(r, "user=cy&deltas=1");
    const made = await s.rpc("1", "checkpoint_create", [{ name: "mine" }]);
    expect(made.success, JSON.stringify(made)).toBe(true);
    expect(made.result.checkpoint).toMatchObject({ id: "c1", name: "mine", by: "cy" });
    const failed = await s.rpc("2", "checkpoint_restore", [{ checkpointId: "c7" }]);
    expect(failed).toMatchObject({ success: false, status: 404, error: "no such checkpoint", details: { checkpointId: ['no checkpoint "c7" in this room'] } });
    const deleted = await s.rpc("3", "checkpoint_delete", [{ checkpointId: "c1" }]);
    expect(deleted.result).toEqual({ deleted: true });
    // A socket without deltas gets the whole state, before the answer.
    const s2 = await joined(r, "user=dee");
    s2.send({ type: "rpc", id: "4", method: "checkpoint_create", args: [{}] });
    const state = await s2.until((f) => f.type === "rpc" || (f.type === "cf_agent_state" && f.state.checkpoints.length === 1));
    expect(state.type).toBe("cf_agent_state");
    expect(state.state.checkpoints[0]).toMatchObject({ id: "c2", name: "checkpoint-2", by: "dee" });
    s.close();
    s2.close();
  });

  it("restores in order: the command interrupted, processes and the terminal ended, the record, a fresh shell", async () => {
    const r = room("cpo");
    await put(r, "keep.txt", "kept");
    await post(`/api/rooms/${r}/checkpoints`, { name: "base" });
    await put(r, "keep.txt", "changed");
    const s = await joined(r, "user=eve&deltas=1");
    expect((await exec(r, "export MARK=1; mkdir -p sub; cd sub")).status).toBe(200);
    await s.until((f) => f.type === "duet_state" && f.patch.shell?.cwd === "/workspace/sub");
    const proc = await post(`/api/rooms/${r}/processes`, { cmd: "sleep 300" });
    expect(proc.status, JSON.stringify(proc.body)).toBe(200);
    const term = await s.rpc("t", "term_open", [{ cols: 80, rows: 24 }]);
    expect(term.success, JSON.stringify(term)).toBe(true);
    const running = exec(r, "sleep 60");
    const started = await s.until((f) => f.type === "duet_exec" && f.phase === "start" && f.cmd === "sleep 60");
    s.send({ type: "rpc", id: "restore", method: "checkpoint_restore", args: [{ checkpointId: "c1" }] });
    // Asked during the restore: runs after it, on the restored files.
    const queued = exec(r, 'cat keep.txt; pwd; echo "[$MARK]"');

    const seen: string[] = [];
    for (;;) {
      const f = await s.next();
      if (f.type === "duet_exec" && f.phase === "complete" && f.execId === started.execId) {
        expect(f.interrupted).toBe(true);
        seen.push("interrupted");
      } else if (f.type === "duet_process" && f.phase === "exit") {
        expect(f.status).toBe("killed");
        seen.push("process exit");
      } else if (f.type === "duet_term" && f.phase === "exit") seen.push("terminal exit");
      else if (f.type === "duet_message" && f.message.event?.kind === "restore") seen.push("record");
      else if (f.type === "duet_state" && f.patch.shell) seen.push(`cwd ${f.patch.shell.cwd}`);
      else if (f.type === "rpc" && f.id === "restore") {
        expect(f.result).toEqual({ restored: true });
        seen.push("answer");
        break;
      }
    }
    expect(seen.slice(0, 1), JSON.stringify(seen)).toEqual(["interrupted"]);
    expect(new Set(seen.slice(1, 3))).toEqual(new Set(["process exit", "terminal exit"]));
    expect(seen.slice(3)).toEqual(["record", "cwd /workspace", "answer"]);
    expect((await running).body.result).toMatchObject({ interrupted: true, exitCode: 130 });
    expect((await queued).body.result.stdout).toBe("kept/workspace\n[]\n");
    expect((await get(`/api/rooms/${r}/processes`)).body.processes[0]).toMatchObject({ status: "killed" });
    s.close();
  });

  it("cancels the agent's turn first: its cancel record, then the restore's", async () => {
    const r = room("cpt");
    await put(r, "f", "x");
    await post(`/api/rooms/${r}/checkpoints`, { name: "x" });
    const key = await script(r, [{ kind: "hang", pieces: ["thinking"] }]);
    const s = await joined(r, "user=fay&deltas=1");
    const asked = post(`/api/rooms/${r}/message`, { text: `go ${key}`, userId: "fay" });
    const start = await s.until((f) => f.type === "duet_ai" && f.phase === "start");
    const restored = await post(`/api/rooms/${r}/checkpoints/c1/restore`, { userId: "gus" });
    expect(restored.body).toEqual({ restored: true });
    expect((await asked).body.reply).toBe(null);
    const tail = (await messages(r)).slice(-3);
    expect(tail.map((m) => [m.role, m.event?.kind ?? null, m.cancelledBy ?? null])).toEqual([
      ["agent", null, "gus"],
      ["system", "cancel", null],
      ["system", "restore", null],
    ]);
    expect(tail[1].event).toEqual({ kind: "cancel", by: "gus", turnId: start.turnId });
    s.close();
  });

  it("takes one automatic checkpoint before a turn's commands: /undo brings a deleted file back", async () => {
    const r = room("cpa");
    await put(r, "precious.txt", "work");
    const key = await script(r, [{ kind: "whole", text: "Cleaning up.\n<run>rm precious.txt</run>\n<run>ls</run>" }]);
    const s = await joined(r, "user=hal&deltas=1");
    const asked = await post(`/api/rooms/${r}/message`, { text: `tidy ${key}`, userId: "hal" });
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    expect(await read(r, "precious.txt")).toBe(404);
    const list = (await get(`/api/rooms/${r}/checkpoints`)).body.checkpoints;
    expect(list).toHaveLength(1);
    const auto = list[0];
    const frames = s.pending();
    const turnId = frames.find((f) => f.type === "duet_ai" && f.phase === "start").turnId;
    expect(auto).toEqual({ id: "c1", name: "auto-1", ts: auto.ts, by: "duet", size: 4, auto: true, turnId, expiresAt: auto.expiresAt });
    // The patch comes with the turn's message, right after it (the turn's
    // frames are as they always were); automatic checkpoints store no record.
    const patchAt = frames.findIndex((f) => f.type === "duet_state" && f.patch.checkpoints?.length === 1);
    const lastExec = frames.map((f) => f.type === "duet_exec" && f.phase === "complete").lastIndexOf(true);
    expect(patchAt).toBeGreaterThan(lastExec);
    expect(frames[patchAt - 1].type).toBe("duet_message");
    expect(frames[patchAt - 1].message.role).toBe("agent");
    expect((await events(r)).map((e) => e.kind)).not.toContain("checkpoint");
    // Undo: restore the one before the last agent turn.
    expect((await post(`/api/rooms/${r}/checkpoints/${auto.id}/restore`, { userId: "hal" })).body).toEqual({ restored: true });
    expect(await read(r, "precious.txt")).toBe("work");
    s.close();
  });

  it("takes none before a turn that runs no command", async () => {
    const r = room("cpn");
    const key = await script(r, [{ kind: "whole", text: "Nothing to run." }]);
    expect((await post(`/api/rooms/${r}/message`, { text: `hi ${key}` })).status).toBe(200);
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
  });

  it("cleanup deletes every checkpoint, its R2 objects too", async () => {
    const r = room("cpc");
    await put(r, "f", "x");
    await post(`/api/rooms/${r}/checkpoints`, { name: "one" });
    const stub = testEnv.DuetAgent.get(testEnv.DuetAgent.idFromName(r));
    const copyId = await runInDurableObject(stub, (_i, state) => JSON.parse(String(state.storage.sql.exec("SELECT copy FROM duet_checkpoints").one().copy)).id);
    expect((await testEnv.BACKUP_BUCKET.list({ prefix: `backups/${copyId}/` })).objects.length).toBeGreaterThan(0);
    expect((await post(`/api/rooms/${r}/cleanup`, {})).status).toBe(200);
    expect((await get(`/api/rooms/${r}/checkpoints`)).body).toEqual({ checkpoints: [] });
    expect((await testEnv.BACKUP_BUCKET.list({ prefix: `backups/${copyId}/` })).objects).toEqual([]);
    const s = await joined(r, "user=ivy");
    s.close();
  });
});

describe("fork", () => {
  it("starts another room from this workspace; the two share nothing after", async () => {
    const a = room("fa");
    const b = room("fb");
    await put(a, "code.txt", "v1");
    const forked = await post(`/api/rooms/${a}/fork`, { to: b, userId: "jo" });
    expect(forked.status, JSON.stringify(forked.body)).toBe(200);
    expect(forked.body).toEqual({ roomId: b });
    expect(await read(b, "code.txt")).toBe("v1");
    const inB = await messages(b);
    expect(inB).toHaveLength(1);
    expect(inB[0]).toMatchObject({ role: "system", userId: "jo", event: { kind: "fork", by: "jo", from: a, to: b } });
    expect(inB[0].text).toBe(`jo forked room ${a} into room ${b}`);
    expect((await events(a)).filter((e) => e.kind === "fork")).toEqual([{ kind: "fork", by: "jo", from: a, to: b }]);
    expect((await get(`/api/rooms/${b}/checkpoints`)).body).toEqual({ checkpoints: [] });
    // Separate afterwards, both ways.
    await put(b, "code.txt", "b's");
    await put(a, "only-a.txt", "a");
    expect(await read(a, "code.txt")).toBe("v1");
    expect(await read(b, "only-a.txt")).toBe(404);
    // `to` exists now (and this room always does).
    for (const to of [b, a]) {
      const again = await post(`/api/rooms/${a}/fork`, { to });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: "the room exists", details: { to: [`room "${to}" exists already`] } });
    }
  });

  it("forks from a checkpoint, and refuses rooms that exist or bad names", async () => {
    const a = room("fc");
    await put(a, "v.txt", "old");
    await post(`/api/rooms/${a}/checkpoints`, { name: "old" });
    await put(a, "v.txt", "new");
    const s = await joined(a, "user=kim");
    const b = room("fd");
    const forked = await s.rpc("f", "fork", [{ to: b, checkpointId: "c1" }]);
    expect(forked.result, JSON.stringify(forked)).toEqual({ roomId: b });
    expect(await read(b, "v.txt")).toBe("old");
    expect((await messages(b))[0].event).toEqual({ kind: "fork", by: "kim", from: a, to: b, checkpointId: "c1" });

    const joinedRoom = room("fe");
    const someone = await joined(joinedRoom, "user=lee");
    expect((await post(`/api/rooms/${a}/fork`, { to: joinedRoom })).status).toBe(409);
    someone.close();
    const talked = room("ff");
    await post(`/api/rooms/${talked}/message`, { text: "hello", to: "room" });
    expect((await post(`/api/rooms/${a}/fork`, { to: talked })).status).toBe(409);
    const bad = await post(`/api/rooms/${a}/fork`, { to: "-x" });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.details)).toEqual(["to"]);
    expect((await post(`/api/rooms/${a}/fork`, {})).body.details).toEqual({ to: ["is required"] });
    const missing = await post(`/api/rooms/${a}/fork`, { to: room("fg"), checkpointId: "c5" });
    expect(missing.status).toBe(404);
    expect(missing.body.details).toEqual({ checkpointId: ['no checkpoint "c5" in this room'] });
    s.close();
  });
});

describe("the workspace as files", () => {
  it("lists a folder sorted by name, with types, sizes and times", async () => {
    const r = room("ls");
    const before = Date.now() - 60_000;
    await exec(r, "mkdir -p dir/inner && printf 12345 > dir/b.txt && printf x > .hidden && ln -s dir/b.txt Link && ln -s dir dlink && mkfifo pipe");
    const top = await get(`/api/rooms/${r}/files/`);
    expect(top.status, JSON.stringify(top.body)).toBe(200);
    expect(top.body.entries.map((e: Json) => [e.name, e.type, e.size])).toEqual([
      [".hidden", "file", 1],
      ["Link", "symlink", 9],
      ["dir", "dir", 0],
      ["dlink", "symlink", 3],
      ["pipe", "other", 0],
    ]);
    for (const e of top.body.entries) {
      expect(Object.keys(e)).toEqual(["name", "type", "size", "mtime"]);
      expect(e.mtime).toBeGreaterThan(before);
    }
    const inner = await get(`/api/rooms/${r}/files/dir/`);
    expect(inner.body.entries.map((e: Json) => e.name)).toEqual(["b.txt", "inner"]);
    expect((await get(`/api/rooms/${r}/files/nope/`)).status).toBe(404);
    expect((await get(`/api/rooms/${r}/files/dir/b.txt/`)).status).toBe(404);
    // A symlink is not followed: not a folder to list.
    expect((await get(`/api/rooms/${r}/files/Link/`)).status).toBe(404);
    const out = await get(`/api/rooms/${r}/files/..%2F/`);
    expect(out.status).toBe(400);
    expect(Object.keys(out.body.details)).toEqual(["path"]);
  });

  it("deletes a file, a symlink (not its target) and a folder, with a record each", async () => {
    const r = room("rm");
    await exec(r, "mkdir -p tree/deep && echo 1 > tree/deep/x && echo t > target && ln -s target link && echo f > file");
    for (const path of ["file", "link", "tree"]) {
      const res = await call("DELETE", `/api/rooms/${r}/files/${path}?userId=max`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ deleted: true });
    }
    expect((await get(`/api/rooms/${r}/files/`)).body.entries.map((e: Json) => e.name)).toEqual(["target"]);
    expect((await events(r)).filter((e) => e.kind === "delete")).toEqual([
      { kind: "delete", by: "max", path: "file" },
      { kind: "delete", by: "max", path: "link" },
      { kind: "delete", by: "max", path: "tree" },
    ]);
    expect((await call("DELETE", `/api/rooms/${r}/files/file`)).status).toBe(404);
    const itself = await call("DELETE", `/api/rooms/${r}/files/`);
    expect(itself.status).toBe(400);
    expect(Object.keys(itself.body.details)).toEqual(["path"]);
    const out = await call("DELETE", `/api/rooms/${r}/files/..%2Fetc`);
    expect(out.status).toBe(400);
    expect(Object.keys(out.body.details)).toEqual(["path"]);
    expect((await call("DELETE", `/api/rooms/${r}/files/a?userId=`)).body.details).toHaveProperty("userId");
  });
});
