// How the adapter signals a running command: the Sandbox SDK 0.12.10 has no
// call for it (`exec`'s AbortSignal only stops reading, `killProcess`
// ignores its signal), so it starts `kill` as a background process, beside
// the busy shell. The stand-in reads the same command back (SIGNAL_COMMAND).

export type Signal = "INT" | "KILL";

/** The shell command that sends `signal` to `pid`'s process group, else to `pid`. */
export function signalCommand(signal: Signal, pid: number): string {
  return `kill -${signal} -- -${pid} 2>/dev/null || kill -${signal} -- ${pid}`;
}

/** Matches what signalCommand writes: [, signal, pid]. */
export const SIGNAL_COMMAND = /^kill -(INT|KILL) -- -(\d+) 2>\/dev\/null \|\| kill -\1 -- \2$/;

// Background processes (src/processes.ts) run as the wrapper below: `bash
// -c CMD` in /workspace, stdin from /dev/null, as a job of a shell with job
// control (`set -m`), so in a process group of its own whose id the
// wrapper keeps in a file for the signals; when its first process ends the
// rest of the group is killed and the wrapper exits with its status (128 + N
// for signal N). The stand-in reads the same commands back.

/** Where the wrapper keeps each process's group id, by the sandbox's process id. */
const GROUPS = "/tmp/duet-processes";

/** Single-quoted for the shell. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

const WRAPPER =
  `set -m; bash -c "$1" </dev/null & p=$!; exec 2>/dev/null; echo "$p" > ${GROUPS}/"$0"; ` +
  `wait "$p"; s=$?; kill -KILL -- "-$p"; rm -f ${GROUPS}/"$0"; exit "$s"`;

/** The command that runs `cmd` as background process `id` (letters, digits and `-`). */
export function processCommand(id: string, cmd: string): string {
  return `mkdir -p ${GROUPS} && cd /workspace && exec bash -c ${shellQuote(WRAPPER)} ${id} ${shellQuote(cmd)}`;
}

/** `cmd` of a processCommand, or undefined when `command` is not one: [id, cmd]. */
export function parseProcessCommand(command: string): [string, string] | undefined {
  const prefix = `mkdir -p ${GROUPS} && cd /workspace && exec bash -c ${shellQuote(WRAPPER)} `;
  if (!command.startsWith(prefix)) return undefined;
  const m = /^([A-Za-z0-9-]+) '((?:[^']|'\\'')*)'$/s.exec(command.slice(prefix.length));
  return m ? [m[1], m[2].replaceAll(`'\\''`, "'")] : undefined;
}

/** The command that sends `signal` to background process `id`'s group. */
export function groupSignalCommand(signal: "TERM" | "KILL", id: string): string {
  return `kill -${signal} -- "-$(cat ${GROUPS}/${id})"`;
}

/** Matches what groupSignalCommand writes: [, signal, id]. */
export const GROUP_SIGNAL_COMMAND = /^kill -(TERM|KILL) -- "-\$\(cat \/tmp\/duet-processes\/([A-Za-z0-9-]+)\)"$/;

/** What the sandbox runs to list its listening ports: the kernel's TCP tables. */
export const PORTS_COMMAND = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null";

/** The ports of /proc/net/tcp{,6} lines in state LISTEN (0A), sorted, once each. */
export function listeningPorts(table: string): number[] {
  const ports = new Set<number>();
  for (const line of table.split("\n")) {
    const cols = line.trim().split(/\s+/);
    // sl local_address rem_address st …
    if (cols.length < 4 || cols[3] !== "0A") continue;
    const local = cols[1];
    const port = parseInt(local.slice(local.lastIndexOf(":") + 1), 16);
    if (Number.isInteger(port) && port > 0 && port < 65536) ports.add(port);
  }
  return [...ports].sort((a, b) => a - b);
}

/** /proc/net/tcp lines of `ports` listening on any address (what the stand-in answers PORTS_COMMAND with). */
export function tcpTable(ports: number[]): string {
  const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
  return (
    head +
    ports
      .map((p, i) => `  ${i}: 00000000:${p.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0\n`)
      .join("")
  );
}

// Checkpoints (src/checkpoints.ts) and the listing's delete run these beside
// the commands' shell, which may be busy.

/** Bytes of /workspace's files and symlinks (a link's size is its target's length), the sleep's staging left out. */
export const WORKSPACE_BYTES_COMMAND =
  "find /workspace -mount -path /workspace/.duet-backup -prune -o \\( -type f -o -type l \\) -printf '%s\\n' | " +
  "awk '{ s += $1 } END { printf \"%d\\n\", s }'";

/** Empties /workspace (an earlier restore's FUSE overlay unmounted first). */
export const EMPTY_WORKSPACE_COMMAND =
  "{ command -v fusermount3 >/dev/null && fusermount3 -uz /workspace 2>/dev/null; true; } && " +
  "find /workspace -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +";
