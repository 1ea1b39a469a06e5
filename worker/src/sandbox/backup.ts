// /workspace across a container's sleep: a sleeping Cloudflare container
// starts again empty, so the sandbox archives /workspace into R2 just before
// it sleeps and unpacks it when the next container starts. Processes and the
// shell's state (cwd, exports, functions) are not kept.
//
// The archive is made inside the container (tar, gzip) in 8 MiB parts, so
// neither side holds more than one part in memory; each part is one R2
// object under `workspaces/{sandbox object id}/{generation}/`, and a
// manifest names the parts of the last complete backup. Both the real
// Sandbox (src/sandbox/container.ts) and the stand-in (worker/dev/container.ts)
// call this with their own SDK methods.

import { fromBase64, toBase64 } from "./bytes";
import { shellQuote } from "./signal";

/** The Sandbox SDK methods a backup uses. */
export interface WorkspaceHost {
  exec(cmd: string): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  readFile(path: string, options: { encoding: "base64" }): Promise<{ content: string }>;
  writeFile(path: string, content: string, options: { encoding: "base64" }): Promise<unknown>;
}

interface Manifest {
  generation: string;
  parts: string[];
  at: string;
}

/** Where the parts wait inside the container; left out of the archive. */
const STAGING = "/workspace/.duet-backup";
const PART_BYTES = 8 * 1024 * 1024;

/**
 * Archives /workspace (tar, gzip, inside the container) into R2 objects
 * `{prefix}part-NNNN`, one part in memory at a time; their names, in order.
 */
export async function archiveWorkspace(host: WorkspaceHost, bucket: R2Bucket, prefix: string): Promise<string[]> {
  try {
    const listing = await run(
      host,
      `set -o pipefail; d=${STAGING}; rm -rf "$d" && mkdir -p "$d" && ` +
        // Files, folders and links only: FIFOs, sockets and devices are
        // left out, as duet serve's checkpoints leave them out.
        `{ cd /workspace && find . -mindepth 1 -path ./.duet-backup -prune -o ! -type p ! -type s ! -type b ! -type c -print0 ` +
        `| tar --null --no-recursion -T - -czf - 2>"$d/err"; echo $? >"$d/rc"; } ` +
        `| split -b ${PART_BYTES} -a 4 -d - "$d/part-" && ` +
        // GNU tar: 1 is "some files changed while read", still a good archive.
        `[ "$(cat "$d/rc")" -le 1 ] && cd "$d" && ls part-*`,
    );
    const parts = listing.split("\n").filter((p) => /^part-\d{4}$/.test(p));
    if (parts.length === 0) throw new Error("tar wrote no archive");
    for (const part of parts) {
      const file = await host.readFile(`${STAGING}/${part}`, { encoding: "base64" });
      await bucket.put(`${prefix}${part}`, fromBase64(file.content));
    }
    return parts;
  } finally {
    await host.exec(`rm -rf ${STAGING}`).catch(() => undefined);
  }
}

/** Unpacks the archive `archiveWorkspace` wrote under `prefix` into `dir` (made if absent; over what is there). */
export async function unpackWorkspace(host: WorkspaceHost, bucket: R2Bucket, prefix: string, parts: string[], dir = "/workspace"): Promise<void> {
  await run(host, `rm -rf ${STAGING} && mkdir -p ${STAGING}`);
  for (const part of parts) {
    const body = await bucket.get(`${prefix}${part}`);
    if (!body) throw new Error(`part ${part} of the archive ${prefix} is missing`);
    const bytes = new Uint8Array(await body.arrayBuffer());
    await host.writeFile(`${STAGING}/${part}`, toBase64(bytes), { encoding: "base64" });
  }
  const into = shellQuote(dir);
  await run(host, `set -o pipefail; mkdir -p ${into} && cat ${STAGING}/part-* | tar -C ${into} -xzf - && rm -rf ${STAGING}`);
}

/** Deletes every R2 object under `prefix`. */
export async function deletePrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  for (;;) {
    const listed = await bucket.list({ prefix });
    if (listed.objects.length === 0) return;
    await bucket.delete(listed.objects.map((o) => o.key));
    if (!listed.truncated) return;
  }
}

/** Where the Sandbox SDK's createBackup keeps a backup's objects in BACKUP_BUCKET (the stand-in too). */
export function copyPrefix(id: string): string {
  return `backups/${id}/`;
}

/** The R2 prefix of one sandbox's backups (its Durable Object id). */
export function backupPrefix(sandboxObjectId: string): string {
  return `workspaces/${sandboxObjectId}/`;
}

/** Removes every backup of a sandbox (cleanup: nothing comes back). */
export async function deleteBackup(bucket: R2Bucket, sandboxObjectId: string): Promise<void> {
  await deletePrefix(bucket, backupPrefix(sandboxObjectId));
}

/**
 * One sandbox's persistence. `restore` on a container's start, `backup`
 * before it sleeps. A failed restore blocks later backups of that
 * container, so an empty workspace never replaces a good backup.
 */
export class WorkspacePersistence {
  private restoreFailed = false;

  constructor(
    private readonly bucket: R2Bucket,
    private readonly sandboxObjectId: string,
  ) {}

  private get prefix(): string {
    return backupPrefix(this.sandboxObjectId);
  }

  /** Archives /workspace into R2; false (nothing replaced) when it could not. */
  async backup(host: WorkspaceHost): Promise<boolean> {
    if (this.restoreFailed) return false;
    try {
      const generation = `${Date.now()}`;
      const parts = await archiveWorkspace(host, this.bucket, `${this.prefix}${generation}/`);
      const manifest: Manifest = { generation, parts, at: new Date().toISOString() };
      await this.bucket.put(`${this.prefix}manifest`, JSON.stringify(manifest));
      await this.dropOtherGenerations(generation);
      return true;
    } catch (e) {
      console.error(`workspace backup of ${this.sandboxObjectId} failed: ${message(e)}`);
      return false;
    }
  }

  /** Unpacks the last backup into /workspace; false when there was none. */
  async restore(host: WorkspaceHost): Promise<boolean> {
    this.restoreFailed = false;
    try {
      const object = await this.bucket.get(`${this.prefix}manifest`);
      if (!object) return false;
      const manifest = (await object.json()) as Manifest;
      await unpackWorkspace(host, this.bucket, `${this.prefix}${manifest.generation}/`, manifest.parts);
      return true;
    } catch (e) {
      this.restoreFailed = true;
      console.error(`workspace restore of ${this.sandboxObjectId} failed: ${message(e)}`);
      return false;
    }
  }

  private async dropOtherGenerations(keep: string): Promise<void> {
    const listed = await this.bucket.list({ prefix: this.prefix });
    const stale = listed.objects
      .map((o) => o.key)
      .filter((k) => k !== `${this.prefix}manifest` && !k.startsWith(`${this.prefix}${keep}/`));
    if (stale.length > 0) await this.bucket.delete(stale);
  }
}

/**
 * Runs `cmd` in a subshell (the room's shell keeps its cwd and options);
 * its stdout, or an error with its stderr when it failed.
 */
async function run(host: WorkspaceHost, cmd: string): Promise<string> {
  const result = await host.exec(`(${cmd})`);
  if (result.exitCode !== 0) {
    throw new Error(`\`${cmd}\` exited ${result.exitCode}: ${result.stderr.trim()}`);
  }
  return result.stdout;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
