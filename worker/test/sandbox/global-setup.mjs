// Starts the stand-in's `duet serve` (the real namespace sandbox) on a
// loopback port with its own random token, for the sandbox tests (Node
// side, so plain JavaScript: the worker's tsconfig has only workerd types).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { randomBytes } from "node:crypto";

/** `$DUET_BIN`, else the repository's debug or release build. */
function duetBinary() {
  if (process.env.DUET_BIN) return process.env.DUET_BIN;
  const repo = resolve(new URL(".", import.meta.url).pathname, "../../..");
  for (const profile of ["debug", "release"]) {
    const path = join(repo, "target", profile, "duet");
    if (existsSync(path)) return path;
  }
  return "duet";
}

/** @type {import("node:child_process").ChildProcess | undefined} */
let child;
/** @type {string | undefined} */
let dataDir;

/** @param {import("vitest/node").TestProject} project */
export default async function setup(project) {
  dataDir = mkdtempSync(join(tmpdir(), "duet-standin-"));
  const token = randomBytes(16).toString("hex");
  child = spawn(
    duetBinary(),
    ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--token", token, "--max-exec-timeout-ms", "3600000",
      // A small disk, so that a test fills it (as root a quota, else the largest file).
      "--disk-mb", "2"],
    { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, DUET_LOG: "warn" } },
  );
  const lines = createInterface({ input: child.stdout });
  const addr = await new Promise((ok, fail) => {
    child.once("exit", (code) => fail(new Error(`duet serve exited ${code}`)));
    lines.once("line", (line) => {
      const m = /^duet: listening on (http:\/\/\S+)$/.exec(line);
      if (m) ok(m[1]);
      else fail(new Error(`duet serve said ${JSON.stringify(line)}`));
    });
  });
  project.provide("standinUrl", addr);
  project.provide("standinToken", token);
  return async () => {
    // duet serve unmounts its rooms' disks on SIGTERM; wait before removing them.
    const exited = new Promise((ok) => child?.once("exit", ok));
    child?.kill("SIGTERM");
    await exited;
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
}
