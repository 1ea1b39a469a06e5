// The seam between a room and its sandbox. The room agent (src/agent.ts and
// the turn) use only this; src/sandbox/adapter.ts implements it with the
// Cloudflare Sandbox SDK, the one file that calls that SDK (with
// background.ts, the background processes and ports). The other way,
// a sandbox that stops (its container sleeps) tells its room (src/rooms.ts).

/** One command to run, with the policy the room applies to it. */
export interface ExecRequest {
  cmd: string;
  /** Wall-clock limit, already capped by the room's maximum. */
  timeoutMs: number;
  /** For this command only. */
  cwd?: string;
  /** For this command only. */
  env?: Record<string, string>;
  /** Bytes kept per stream; beyond it the command is killed and `truncated`. */
  outputCap: number;
  /** Output as it comes (already decoded text), in order. */
  onStdout(data: string): void;
  onStderr(data: string): void;
  /** The command's call to the sandbox went out (each time it is asked). */
  onSent?(): void;
}

/** What came of a command (the room turns it into an ExecResult). */
export interface ExecOutcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  interrupted: boolean;
  /** The shell had to be restarted, or the command could not run. */
  error?: string;
  /**
   * The shell ended during the command and was replaced: it exited by
   * itself (`exit`), or it stopped and had to be killed.
   */
  shell?: "exited" | "stopped";
  /** The shell's working directory after the command: where the next one runs. */
  cwd?: string;
  /**
   * Milliseconds the sandbox took: the command (from the call to its end;
   * of that, until the sandbox said it started, and from then to its
   * end), then asking for the shell's directory (0: the exec told it).
   */
  spans?: { command: number; start?: number; run?: number; cwd: number };
}

/** The sandbox could not be reached because its container is starting. */
export class SandboxStarting extends Error {
  constructor(readonly retryAfterSecs: number) {
    super("the sandbox is starting");
  }
}

/** A file path refused by the path rules (400 `details.path`). */
export class BadPath extends Error {}

/** A FIFO, socket or device: never read (it could block the reader forever). */
export class NotRegular extends Error {
  constructor() {
    super("is not a regular file (a FIFO, socket or device is never read)");
  }
}

/** A workspace file being read: its length, then its bytes as they come. */
export interface FileStream {
  size: number;
  body: ReadableStream<Uint8Array>;
}

/** A member of a push the contract refuses: 400 `details.member` "NAME: WHY"; nothing is written. */
export class RefusedMember extends Error {
  constructor(
    readonly member: string,
    readonly why: string,
  ) {
    super(`${member}: ${why}`);
  }
}

/** A folder of a push whose members would go through a symlink the workspace has there (`member` is the folder). */
export class InWorkspace extends RefusedMember {}

/** A path that should be a folder is a file (400 `details.path` "is not a directory"). */
export class NotAFolder extends Error {
  constructor() {
    super("is not a directory");
  }
}

/** The room's disk is full (507). */
export class DiskFull extends Error {
  constructor() {
    super("the room's disk is full");
  }
}

/**
 * A copy of /workspace kept outside the container: the Sandbox SDK's
 * `DirectoryBackup` handle (its objects are in the BACKUP_BUCKET R2
 * bucket, under `backups/{id}/`), restorable into any room's sandbox.
 */
export interface WorkspaceCopy {
  readonly id: string;
  readonly dir: string;
  readonly localBucket?: boolean;
}

/** One entry of a workspace folder, as the sandbox lists it. */
export interface FolderEntry {
  name: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  /** Last modified, ms since the epoch. */
  mtime: number;
}

/** A terminal's size in characters. */
export interface TermSize {
  cols: number;
  rows: number;
}

/** What a pseudo-terminal tells its room. */
export interface PtyEvents {
  /** Output bytes, exactly as the program wrote them, in order. */
  onData(bytes: Uint8Array): void;
  /**
   * The terminal ended: its shell's exit status, or null (killed, closed, or the sandbox cannot say),
   * and why when it ended unexpectedly (its connection to the sandbox was lost). Once.
   */
  onExit(exitCode: number | null, reason?: string): void;
}

/** A bash on a pseudo-terminal in the room's sandbox, held by the room. */
export interface Pty {
  write(bytes: Uint8Array): void;
  resize(size: TermSize): void;
  /** Ends the terminal and its processes; onExit is not called for it. */
  close(): Promise<void>;
}

/** What a background process tells its room. */
export interface ProcessEvents {
  /** Output as it comes (decoded text), in order per stream. */
  onOutput(stream: "stdout" | "stderr", data: string): void;
  /**
   * It ended: its exit status (128 + N when signal N ended it), or null
   * when the sandbox cannot say (it went away under it). Once, after its
   * last output.
   */
  onExit(exitCode: number | null): void;
}

/** A background process running in the room's sandbox. */
export interface SandboxProcess {
  /** Sends `signal` to its process group (the room sends TERM, then KILL). */
  signal(signal: "TERM" | "KILL"): Promise<void>;
}

/** A port something listens on, and its public preview URL where the sandbox has one. */
export interface ListeningPort {
  port: number;
  url?: string;
}

/** Nothing listens on the port inside the sandbox (or the sandbox does not run): 502. */
export class NothingListens extends Error {
  constructor(readonly port: number) {
    super(`nothing listens on port ${port} in the sandbox`);
  }
}

/** One room's sandbox. Calls for one room may overlap (an interrupt during an exec). */
export interface RoomSandbox {
  /** Runs one command in the room's persistent shell; throws SandboxStarting. */
  exec(req: ExecRequest): Promise<ExecOutcome>;
  /** SIGINT to the running command (SIGKILL 2 s later); false when none runs. */
  interrupt(): Promise<boolean>;
  /**
   * A workspace file's bytes, or null when absent (or a folder). `path` is
   * relative to /workspace, already checked. Throws NotRegular.
   */
  readFile(path: string): Promise<Uint8Array | null>;
  /** readFile streamed: the bytes are never held whole. */
  openFile(path: string): Promise<FileStream | null>;
  /** Writes a workspace file, creating parent folders; throws DiskFull. */
  writeFile(path: string, bytes: Uint8Array): Promise<void>;
  /**
   * writeFile from chunks as they come (never held whole), replacing the
   * file at the end (its mode kept); the number of bytes written. An
   * error of `chunks` leaves the old file as it was, and is thrown.
   */
  writeFileFrom(path: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<number>;
  /**
   * The entries of workspace folder `dir` ("" is /workspace itself), in
   * no particular order; null when it is absent or not a folder. Throws
   * BadPath.
   */
  listFiles(dir: string): Promise<FolderEntry[] | null>;
  /** Deletes a file, a symlink (not its target) or a folder with all in it; false when absent. Throws BadPath. */
  deleteFile(path: string): Promise<boolean>;
  /**
   * Unpacks a push into folder `dir` ("" is /workspace; made if absent):
   * `tar` (its chunks as they come, each already checked, never held whole)
   * goes to the sandbox first, and only once all of it arrived is it
   * unpacked beside the workspace and moved into place; with `mirror`,
   * what the folder holds and the archive does not is deleted. An error of
   * `tar` (thrown as it is) or of the unpacking leaves /workspace as it
   * was. Throws BadPath, NotAFolder, InWorkspace (a folder of the archive
   * is a symlink in the workspace), DiskFull.
   */
  unpackArchive(dir: string, tar: AsyncIterable<Uint8Array>, mirror: boolean): Promise<{ deleted: number }>;
  /** A tar of folder `dir` ("" is /workspace), streamed; null when absent. Throws BadPath, NotAFolder. */
  packArchive(dir: string): Promise<ReadableStream<Uint8Array> | null>;
  /** git's diff of `copy` (a checkpoint) against /workspace, paths as `a/P b/P` (src/diff.ts tidies it), streamed. */
  diffWorkspace(copy: WorkspaceCopy): Promise<ReadableStream<Uint8Array>>;
  /** Bytes of /workspace's files (their lengths; a symlink its target's length). */
  workspaceBytes(): Promise<number>;
  /** Copies /workspace out of the container (createBackup), kept for `ttlSecs`. */
  copyWorkspace(name: string, ttlSecs: number): Promise<WorkspaceCopy>;
  /**
   * /workspace becomes `copy` (emptied first, then restoreBackup), and the
   * command shell starts afresh there. Nothing else should run meanwhile.
   */
  restoreWorkspace(copy: WorkspaceCopy): Promise<void>;
  /**
   * Opens the room's shared terminal (`termId` names it) at `size`; throws
   * SandboxStarting. Its processes run until close() or their own exit.
   */
  openTerminal(termId: string, size: TermSize, events: PtyEvents): Promise<Pty>;
  /**
   * Starts `bash -c cmd` as background process `id` (the room's id for it)
   * in /workspace, in a process group of its own, stdin from /dev/null;
   * throws SandboxStarting. Its events come until it ended.
   */
  startProcess(id: string, cmd: string, events: ProcessEvents): Promise<SandboxProcess>;
  /**
   * The TCP ports something listens on inside the sandbox (any address),
   * sorted; [] when the sandbox does not run (this never starts it).
   */
  listeningPorts(): Promise<ListeningPort[]>;
  /**
   * `request` (its URL's path and query, headers and body as given; a
   * WebSocket upgrade too) to http://localhost:{port} inside the sandbox;
   * throws NothingListens.
   */
  fetchPort(port: number, request: Request): Promise<Response>;
  /**
   * A WebSocket (the 101 answer to `request`, an upgrade) that carries a
   * TCP connection to `port` inside the sandbox: binary frames both ways,
   * closed (1000) when the port closes it, 1003 on a text frame; at most
   * `bytesPerSec` bytes a second read from the client. Throws
   * NothingListens before upgrading.
   */
  tunnel(port: number, request: Request, bytesPerSec: number): Promise<Response>;
  /** Ends every process and removes every file of the room (cleanup). */
  destroy(): Promise<void>;
}
